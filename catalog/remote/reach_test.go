package remote

import (
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestReachable follows the connectivity of real nodes: reachable while
// one serves, unreachable (with the moment it became so) once every node
// is stopped or reports NOT_SERVING, reachable again when a node comes back
// on the same address.
func TestReachable(t *testing.T) {
	nodes := startNodes(t, "a", "b")
	c := newTestClient(t, Options{Target: staticTarget(nodes...)})
	reachable := func() bool { ok, _ := c.Reachable(); return ok }
	waitFor(t, 10*time.Second, "the client to reach a node", reachable)
	if ok, since := c.Reachable(); !ok || !since.IsZero() {
		t.Fatalf("Reachable = %v, %v; want true, zero time", ok, since)
	}

	nodes[0].stop()
	if _, err := call(c, groupOK); err != nil {
		t.Fatalf("call with one node left: %v", err)
	}
	if !reachable() {
		t.Fatal("unreachable with one node serving")
	}

	before := time.Now()
	nodes[1].health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor(t, 10*time.Second, "the client to see no serving node", func() bool { return !reachable() })
	if _, since := c.Reachable(); since.Before(before) {
		t.Errorf("downSince %v is before the last node stopped serving (%v)", since, before)
	}
	nodes[1].stop()

	again := startNodeOn(t, "a2", nodes[0].addr)
	waitFor(t, 15*time.Second, "the client to reach the restarted node", reachable)
	// Reachable is true once one of the ClientConns is READY; a call on
	// another may fail until it has reconnected too.
	waitFor(t, 15*time.Second, "a call to be served by the restarted node", func() bool {
		name, err := call(c, groupOK)
		return err == nil && name == again.name
	})
}

// TestReachableNoNode: a client whose only node never started is
// unreachable from New on.
func TestReachableNoNode(t *testing.T) {
	n := startNode(t, "gone")
	n.stop()
	before := time.Now()
	c := newTestClient(t, Options{Target: staticTarget(n)})
	ok, since := c.Reachable()
	if ok || since.Before(before) {
		t.Fatalf("Reachable = %v, %v; want false since about New (%v)", ok, since, before)
	}
	c.Close()
	if ok, _ := c.Reachable(); ok {
		t.Error("reachable after Close")
	}
}
