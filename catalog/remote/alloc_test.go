//go:build !race

package remote

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// The client adds (almost) no allocations to a plain gRPC call: measured
// against the generated client on a plain ClientConn in the same run
// (server-side allocations, same process, are in both numbers).
func TestAllocsVersusPlainGRPC(t *testing.T) {
	n := startNode(t, "a")
	raw, err := grpc.NewClient("passthrough:///"+n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cat := catalogpb.NewCatalogClient(raw)
	c := newTestClient(t, Options{Target: staticTarget(n)})
	warmUp(t, c, n)
	r := req(groupOK)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	plain := testing.AllocsPerRun(500, func() {
		if _, err := cat.GetProductMasters(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
	ours := testing.AllocsPerRun(500, func() {
		if _, err := c.GetProductMasters(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocs per call (client + in-process server): plain gRPC %.1f, Client %.1f", plain, ours)
	// Slack for noise from background goroutines (health watches, timers).
	if ours > plain+6 {
		t.Errorf("Client allocates %.1f per call, plain gRPC %.1f: more than 6 over", ours, plain)
	}
}
