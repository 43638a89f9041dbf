package remote

import (
	"context"
	"time"

	"github.com/rtbd/rtbd/catalog"
)

// refresher asks the nodes, in the background, for the keys that hits
// queued in the last refreshAhead of their entries' life (all those
// waiting, up to MaxIDs per call), and inserts the answers as a request's
// misses are: an entry in use is replaced before it expires. A failed
// call unqueues its keys, so that a later hit queues them again.
func (c *Client) refresher() {
	defer c.vt.wg.Done()
	nc := c.near
	sc := &batchScratch{index: map[ncKey]int32{}}
	for {
		sc.keys = sc.keys[:0]
		clear(sc.index)
		select {
		case <-c.vt.ctx.Done():
			return
		case k := <-nc.refresh:
			sc.index[k] = 0
			sc.keys = append(sc.keys, k)
		}
	more:
		for len(sc.keys) < c.maxIDs {
			select {
			case k := <-nc.refresh:
				if _, dup := sc.index[k]; !dup {
					sc.index[k] = int32(len(sc.keys))
					sc.keys = append(sc.keys, k)
				}
			default:
				break more
			}
		}
		var err error
		if c.closed.Load() || c.legacy() {
			err = catalog.ErrUnavailable
		} else {
			ctx, cancel := context.WithTimeout(c.vt.ctx, max(4*c.callTimeout, 200*time.Millisecond))
			err = c.fetch(ctx, sc)
			cancel()
		}
		clear(sc.got)
		if err != nil {
			for _, k := range sc.keys {
				nc.unqueue(k)
			}
			c.m.refreshedN(refreshError, len(sc.keys))
			continue
		}
		c.m.refreshedN(refreshOK, len(sc.keys))
	}
}
