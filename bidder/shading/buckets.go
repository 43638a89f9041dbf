package shading

import "math"

// NumBuckets is the number of price buckets.
const NumBuckets = 128

// Price buckets are geometric: bucket b holds the prices (CPM, micros of
// the bid currency) in [Edge(b), Edge(b+1)), from bucketBase by a factor
// of bucketRatio, so every bucket is 8% wide whatever the price level:
// 0.01 to about 191 CPM. Bucket 0 also holds every price below 0.01, the
// last bucket every price above its lower edge.
const (
	bucketBase  = 10_000 // micros CPM: 0.01
	bucketRatio = 1.08
)

// edges[b] is the lower edge of bucket b; edges[NumBuckets] the upper edge
// of the last.
var edges = func() (e [NumBuckets + 1]float64) {
	for i := range e {
		e[i] = bucketBase * math.Pow(bucketRatio, float64(i))
	}
	return e
}()

// Edge returns the lower edge of bucket b in micros CPM (b up to
// NumBuckets, the upper edge of the last bucket).
func Edge(b int) float64 { return edges[min(max(b, 0), NumBuckets)] }

// Bucket returns the bucket of a price in micros CPM: a binary search over
// the edges, no allocation.
func Bucket(priceMicros int64) uint16 {
	p := float64(priceMicros)
	lo, hi := 0, NumBuckets-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if edges[mid] <= p {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return uint16(lo)
}
