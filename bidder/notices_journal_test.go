package bidder

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/bidder/token"
)

// TestBillJournaled: an accepted bill is in the journal with its fields
// (nonce, kind, user, charge, expiry = token expiry + clock skew) before
// it is answered; a bill the journal cannot write is answered 503, not
// charged, and not remembered as seen (its retry is not a "replay").
func TestBillJournaled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	mf := newMoneyFixture(t, moneyCampaigns(t, ""), func(o *Options) {
		o.Journal = j
		o.NoticeClockSkew = 7 * time.Minute
	})
	now := mf.clock.Now()
	tok := token.Token{Kind: token.KindBill, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "money", Creative: "c", Auction: "a1", Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD"}
	tok.Nonce[3] = 9
	raw, err := mf.keys.Append(nil, &tok)
	if err != nil {
		t.Fatal(err)
	}
	if st := mf.notice(PathBill+"?t="+string(raw)+"&p=${AUCTION_PRICE}", "1.25"); st != 204 {
		t.Fatalf("bill: %d", st)
	}
	if j.Pending() != 1 {
		t.Fatalf("journal pending %d after an accepted bill, want 1", j.Pending())
	}
	j.Close()
	j2, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	var got []spend.Notice
	if _, err := j2.Replay(func(c string, n *spend.Notice) error {
		if c != "money" {
			t.Errorf("campaign %q", c)
		}
		got = append(got, *n)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("journal holds %d notices, want 1", len(got))
	}
	// The nonce the token carries; a token without one gets the derived nonce.
	var parsed token.Token
	if _, err := mf.keys.Parse(&parsed, raw, token.KindBill, now, nil); err != nil {
		t.Fatal(err)
	}
	wantNonce := spend.Nonce(parsed.NoticeNonce())
	n := got[0]
	if n.Nonce != wantNonce || n.Kind != spend.NoticeCharge || n.User != userBulk || n.Micros != 1250 ||
		!n.At.Equal(now) || !n.Expires.Equal(tok.Expires.Add(7*time.Minute)) || n.Seq == 0 {
		t.Errorf("journaled %+v; want nonce %x, charge 1250, at %v, expires %v", n, wantNonce, now, tok.Expires.Add(7*time.Minute))
	}

	// The journal (closed above) refuses: 503, twice (not a replay), not charged.
	late := billPath(t, mf.keys, "a2", "${AUCTION_PRICE}")
	for i := range 2 {
		if st := mf.notice(late, "1"); st != 503 {
			t.Errorf("bill %d with the journal refusing: %d, want 503", i, st)
		}
	}
	if got := mf.notices("bill", "unavailable"); got != 2 {
		t.Errorf("unavailable = %v, want 2", got)
	}
	if err := mf.w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tot, err := mf.store.Read(context.Background(), []string{"money"}, now.UTC().Format(time.DateOnly))
	if err != nil || tot[0].TotalMicros != 1250 || tot[0].TotalImps != 1 {
		t.Errorf("store %+v %v, want only the journaled bill (1250 micros, 1 impression)", tot, err)
	}
}

// billPath is a billing notice URL (path and query) for auction, signed
// with keys, clearing at p.
func billPath(t *testing.T, keys *token.Keys, auction, p string) string {
	t.Helper()
	now := time.Now()
	tok, err := keys.Append(nil, &token.Token{Kind: token.KindBill, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "money", Creative: "c", Auction: auction, Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	return PathBill + "?t=" + string(tok) + "&p=" + p
}
