package spendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// RunLeaseSuite checks a spend.LeaseStore: one holder at a time, renewal
// by the holder only, release by the holder only, a lease nobody renews
// taken over after its TTL, and AcquireLease refusing while a live holder
// renews and taking over once it stops. newStore returns a store on a
// fresh key space; peer returns another client of the same key space.
func RunLeaseSuite(t *testing.T, newStore func(t *testing.T) spend.LeaseStore, peer func(t *testing.T, s spend.LeaseStore) spend.LeaseStore) {
	ctx := context.Background()
	const ttl = time.Second
	t.Run("one_holder", func(t *testing.T) {
		a := newStore(t)
		b := peer(t, a)
		if held, _, err := a.TakeLease(ctx, "i1", "A", time.Minute); err != nil || !held {
			t.Fatalf("A takes a free lease: %v %v", held, err)
		}
		if held, other, err := b.TakeLease(ctx, "i1", "B", time.Minute); err != nil || held || other != "A" {
			t.Fatalf("B takes A's lease: held %v other %q %v; want refused, held by A", held, other, err)
		}
		if held, _, err := b.TakeLease(ctx, "i2", "B", time.Minute); err != nil || !held {
			t.Fatalf("another id is another lease: %v %v", held, err)
		}
		if held, _, err := a.TakeLease(ctx, "i1", "A", time.Minute); err != nil || !held {
			t.Fatalf("A renews: %v %v", held, err)
		}
		if err := b.ReleaseLease(ctx, "i1", "B"); err != nil {
			t.Fatal(err)
		}
		if held, _, _ := b.TakeLease(ctx, "i1", "B", time.Minute); held {
			t.Fatal("B's release freed A's lease")
		}
		if err := a.ReleaseLease(ctx, "i1", "A"); err != nil {
			t.Fatal(err)
		}
		if held, _, err := b.TakeLease(ctx, "i1", "B", time.Minute); err != nil || !held {
			t.Fatalf("B takes the lease A released: %v %v", held, err)
		}
	})
	t.Run("expires", func(t *testing.T) {
		a := newStore(t)
		b := peer(t, a)
		if held, _, err := a.TakeLease(ctx, "i1", "A", ttl); err != nil || !held {
			t.Fatalf("A: %v %v", held, err)
		}
		deadline := time.Now().Add(10 * ttl)
		for {
			held, other, err := b.TakeLease(ctx, "i1", "B", ttl)
			if err != nil {
				t.Fatal(err)
			}
			if held {
				break
			}
			if other != "A" || time.Now().After(deadline) {
				t.Fatalf("B never took a lease nobody renews (held by %q)", other)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if held, other, _ := a.TakeLease(ctx, "i1", "A", ttl); held || other != "B" {
			t.Fatalf("A renews a lease B took over: held %v, other %q", held, other)
		}
	})
	t.Run("acquire", func(t *testing.T) {
		a := newStore(t)
		b := peer(t, a)
		la, err := spend.AcquireLease(ctx, a, "i1", "A", spend.LeaseOptions{TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		// A live holder renews: B gives up after the bounded wait.
		_, err = spend.AcquireLease(ctx, b, "i1", "B", spend.LeaseOptions{TTL: ttl})
		var held *spend.LeaseHeldError
		if !errors.As(err, &held) || !errors.Is(err, spend.ErrLeaseHeld) || held.Holder != "A" || !la.Held() {
			t.Fatalf("second holder while A renews: %v (A held %v)", err, la.Held())
		}
		if err := la.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// A holder that took the lease and renews no more (a crash, kill
		// -9): B waits for it to expire and takes it over.
		if held, _, err := a.TakeLease(ctx, "i2", "A", ttl); err != nil || !held {
			t.Fatalf("A: %v %v", held, err)
		}
		lb, err := spend.AcquireLease(ctx, b, "i2", "B", spend.LeaseOptions{TTL: ttl})
		if err != nil {
			t.Fatalf("after the holder stopped renewing: %v", err)
		}
		if !lb.Held() {
			t.Fatal("Held false after AcquireLease")
		}
		// A clean Close frees it at once.
		if err := lb.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if held, _, err := a.TakeLease(ctx, "i2", "C", time.Minute); err != nil || !held {
			t.Fatalf("after Close: %v %v", held, err)
		}
	})
}
