package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// recommendListsMain is `rtbd bench recommend-lists`: for users of an
// embedded user store, what the catalog recommends from their viewed
// products (similar_to_viewed, per viewed group), as the JSON Lines `rtbd
// users recommend` reads: so the two populations of
// bench/wrk/recommend-cpu.sh get the same products, and differ only in
// where the list comes from.
func recommendListsMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench recommend-lists", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	data := fs.String("data", "./data/catalog", "index data directory whose live version gives the similar lists")
	users := fs.String("users", "", "embedded user store (a bidder's data_dir/users) the profiles are read from (required; no bidder may hold it)")
	prefix := fs.String("uid-prefix", "demo-user-", "user ids are this prefix and a number from -first to -last")
	first := fs.Int("first", 1, "first user number")
	last := fs.Int("last", 500, "last user number")
	quantity := fs.Int("quantity", 30, "recommended products per viewed group")
	out := fs.String("out", "-", "JSON Lines output file (- for stdout)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *users == "" || *first < 1 || *last < *first || *quantity < 1 || *quantity > 100 {
		return fmt.Errorf("%w: recommend-lists needs -users DIR, 1 <= -first <= -last and 1 <= -quantity <= 100", ErrUsage)
	}
	st, err := pebblestore.Open(*users, pebblestore.Options{})
	if err != nil {
		return fmt.Errorf("bench: recommend-lists: -users: %w", err)
	}
	defer st.Close()
	cat, err := catalog.OpenLocal(*data, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		return fmt.Errorf("bench: recommend-lists: -data: %w", err)
	}
	defer cat.Close()
	w := io.Writer(stdout)
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("bench: recommend-lists: -out: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw) // a line per value
	type group struct {
		Group int64   `json:"group"`
		IDs   []int64 `json:"ids"`
	}
	var p user.Profile
	var absent int
	for i := *first; i <= *last; i++ {
		uid := *prefix + strconv.Itoa(i)
		found, err := st.Get(ctx, uid, &p)
		if err != nil {
			return fmt.Errorf("bench: recommend-lists: %s: %w", uid, err)
		}
		if !found {
			absent++
			continue
		}
		line := struct {
			UID         string  `json:"uid"`
			Recommended []group `json:"recommended"`
		}{UID: uid, Recommended: []group{}}
		for _, g := range p.Viewed {
			resp, err := cat.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: g.Group,
				Product1Ids: g.IDs, Product1QuantityAtMost: 1, Product2QuantityAtMost: int32(*quantity), SimilarToViewed: true})
			if err != nil {
				return fmt.Errorf("bench: recommend-lists: %s, group %d: %w", uid, g.Group, err)
			}
			var ids []int64
			for _, pr := range resp.Product2S {
				ids = append(ids, pr.ProductId)
			}
			if len(ids) > 0 {
				line.Recommended = append(line.Recommended, group{g.Group, ids})
			}
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("bench: recommend-lists: -out: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("bench: recommend-lists: -out: %w", err)
	}
	fmt.Fprintf(stderr, "recommend-lists: %d users written, %d without a profile\n", *last-*first+1-absent, absent)
	return nil
}
