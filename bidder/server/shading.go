package server

import "time"

// startShading runs the Shader's Refresh every interval until stopShading.
func (s *Server) startShading(interval time.Duration) {
	sh := s.Bidder.Shader()
	if sh == nil || interval <= 0 {
		return
	}
	stop := make(chan struct{})
	s.shadingStop = stop
	s.shadingWG.Add(1)
	go func() {
		defer s.shadingWG.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				sh.Refresh(now)
			}
		}
	}()
}

func (s *Server) stopShading() {
	if s.shadingStop != nil {
		close(s.shadingStop)
		s.shadingStop = nil
	}
	s.shadingWG.Wait()
}
