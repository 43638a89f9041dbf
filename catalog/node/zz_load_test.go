package node_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func TestZZLoad(t *testing.T) {
	addr := os.Getenv("ZZ_ADDR")
	if addr == "" {
		t.Skip()
	}
	conn, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	cl := catalogpb.NewCatalogClient(conn)
	reqs := catalogtest.Workload{N: 1000000, Groups: 10, IDs: 15}.Requests(100_000, 3)
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; time.Now().Before(deadline); i += 16 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				cl.GetProductMasters(ctx, reqs[i%len(reqs)])
				cancel()
			}
		}(w)
	}
	wg.Wait()
}
