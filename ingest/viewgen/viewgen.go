// Package viewgen generates product views with a planted structure, as
// view records (records.KindView) under a records root, for evaluating and
// measuring the similar lists (`rtbd gen -views`, `rtbd bench recommend`,
// the tests of ingest/similar).
//
// The products are those of the synthetic feed (ingest/feedgen) with the
// same feedgen.Options: product i has id StartID+i and group 1+i%Groups.
// Within each group, products are cut into clusters of ClusterSize
// consecutive products (much finer than groups). Each user picks a group
// and a cluster in it (clusters drawn with a skew, so some are popular),
// and views products of that cluster, except for a Noise share of views
// that go to any product of the group (also skewed to popular ones). The
// clusters are not in the feed's content (categories and brands are drawn
// independently), so only co-views can find them.
//
// Users are written in order, each within one hour: user u's views fall
// in hour u*Hours/Users after Start, in time order. The output depends on
// the Options alone.
package viewgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/splitmix"
	"github.com/rtbd/rtbd/records"
)

// Options describe the views. Zero values take the defaults noted.
type Options struct {
	// Feed is the synthetic feed whose products are viewed (Products and
	// Groups matter; Products must be > 0).
	Feed feedgen.Options
	// Users is the number of users. Must be > 0.
	Users int
	// ViewsPerUser is the mean number of views per user (each user makes
	// 2..2*mean-2 views, at least 2). Default 8.
	ViewsPerUser int
	// ClusterSize is the number of products per cluster. Default 20.
	ClusterSize int
	// Noise is the share of views outside the user's cluster. Default 0.2;
	// negative: none.
	Noise float64
	// Seed selects the views.
	Seed int64
	// Start is the first hour's start (UTC); zero: 24*Hours hours before
	// now, truncated to the hour.
	Start time.Time
	// Hours over which users are spread. Default 24.
	Hours int
	// Instance names the files (<instance>-<seq>.parquet). Default "gen".
	Instance string
}

// ErrBadOptions is wrapped by Validate's errors.
var ErrBadOptions = errors.New("viewgen: bad options")

func (o Options) withDefaults() Options {
	if o.ViewsPerUser <= 0 {
		o.ViewsPerUser = 8
	}
	if o.ClusterSize <= 0 {
		o.ClusterSize = 20
	}
	if o.Noise == 0 {
		o.Noise = 0.2
	}
	if o.Noise < 0 {
		o.Noise = 0
	}
	if o.Hours <= 0 {
		o.Hours = 24
	}
	if o.Start.IsZero() {
		o.Start = time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(o.Hours) * time.Hour)
	}
	o.Start = o.Start.UTC()
	if o.Instance == "" {
		o.Instance = "gen"
	}
	if o.Feed.Groups <= 0 {
		o.Feed.Groups = 1
	}
	if o.Feed.StartID == 0 {
		o.Feed.StartID = 1
	}
	return o
}

// Validate checks o.
func (o Options) Validate() error {
	var errs []error
	if o.Feed.Products <= 0 {
		errs = append(errs, errors.New("products: must be > 0"))
	}
	if o.Users <= 0 {
		errs = append(errs, errors.New("users: must be > 0"))
	}
	if o.Noise > 1 {
		errs = append(errs, fmt.Errorf("noise: at most 1, got %g", o.Noise))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrBadOptions, errors.Join(errs...))
	}
	return nil
}

// View is one generated view.
type View struct {
	User      string
	Group, ID int64
	Time      time.Time
	// Cluster is the viewed product's cluster (Cluster of its index).
	Cluster int64
}

// Cluster returns the cluster of product index i (0-based, as in
// feedgen.Product): clusters are numbered across groups, so two products
// share one only within a group.
func Cluster(i int, o Options) int64 {
	o = o.withDefaults()
	g := i % o.Feed.Groups
	j := i / o.Feed.Groups
	return int64(j/o.ClusterSize)*int64(o.Feed.Groups) + int64(g)
}

// ClusterOfID is Cluster for a product id.
func ClusterOfID(id int64, o Options) int64 {
	o = o.withDefaults()
	return Cluster(int(id-o.Feed.StartID), o)
}

// Generate calls fn with every view, user by user, each user's in time
// order. An error from fn stops it.
func Generate(o Options, fn func(*View) error) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	n, G := o.Feed.Products, o.Feed.Groups
	var v View
	for u := 0; u < o.Users; u++ {
		r := splitmix.Rand{S: splitmix.Mix(uint64(o.Seed)) ^ splitmix.Mix(uint64(u)^0x9e3779b97f4a7c15)}
		g := r.IntN(min(G, n))
		perGroup := (n - g + G - 1) / G // products of group g: indexes g, g+G, ...
		clusters := (perGroup + o.ClusterSize - 1) / o.ClusterSize
		c := skewed(&r, clusters)
		inCluster := min(o.ClusterSize, perGroup-c*o.ClusterSize)
		views := 2 + r.IntN(max(1, 2*o.ViewsPerUser-3))
		hour := o.Start.Add(time.Duration(int64(u)*int64(o.Hours)/int64(o.Users)) * time.Hour)
		t := hour.Add(time.Duration(r.IntN(1800)) * time.Second)
		v.User = "u" + strconv.Itoa(u)
		for k := 0; k < views; k++ {
			var j int
			if r.Float64() < o.Noise {
				j = skewed(&r, perGroup)
			} else {
				j = c*o.ClusterSize + r.IntN(inCluster)
			}
			i := j*G + g
			v.Group, v.ID = 1+int64(g), o.Feed.StartID+int64(i)
			v.Cluster = Cluster(i, o)
			v.Time = t
			t = t.Add(time.Duration(1+r.IntN(90)) * time.Second)
			if err := fn(&v); err != nil {
				return err
			}
		}
	}
	return nil
}

// skewed draws from [0, n) with small values more likely (density falling
// linearly with the square root), so that some clusters and products are
// popular.
func skewed(r *splitmix.Rand, n int) int {
	x := r.Float64()
	return min(n-1, int(float64(n)*x*x))
}

// Write generates the views into Parquet files under root, in the records
// layout (root/kind=view/date=YYYY-MM-DD/hour=HH/<instance>-<seq>.parquet,
// each written under a hidden name and renamed when complete), and returns
// how many it wrote.
func Write(root string, o Options) (int64, error) {
	if err := o.Validate(); err != nil {
		return 0, err
	}
	o = o.withDefaults()
	var (
		cur   time.Time
		f     *os.File
		w     *parquet.GenericWriter[records.Row]
		tmp   string
		final string
		seq   uint64
		n     int64
		rec   records.Record
		row   [1]records.Row
	)
	closeFile := func() error {
		if w == nil {
			return nil
		}
		err := w.Close()
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, final)
		}
		w, f = nil, nil
		return err
	}
	err := Generate(o, func(v *View) error {
		hour := v.Time.Truncate(time.Hour)
		if w == nil || !hour.Equal(cur) {
			if err := closeFile(); err != nil {
				return err
			}
			cur = hour
			dir := records.PartitionDir(root, records.KindView, hour)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			seq++
			name := records.FileName(o.Instance, seq)
			final, tmp = filepath.Join(dir, name), filepath.Join(dir, "."+name)
			var err error
			if f, err = os.Create(tmp); err != nil {
				return err
			}
			w = parquet.NewGenericWriter[records.Row](f, parquet.Compression(&zstd.Codec{}))
		}
		rec = records.Record{Kind: records.KindView, Time: v.Time, Instance: o.Instance,
			UserID: v.User, GroupID: v.Group, ProductID: v.ID}
		binary.BigEndian.PutUint64(rec.Nonce[:8], uint64(o.Seed))
		binary.BigEndian.PutUint64(rec.Nonce[8:], uint64(n)+1)
		rec.ToRow(&row[0])
		if _, err := w.Write(row[:]); err != nil {
			return err
		}
		n++
		return nil
	})
	if cerr := closeFile(); err == nil {
		err = cerr
	}
	if err != nil {
		if f != nil {
			f.Close()
			os.Remove(tmp)
		}
		return n, fmt.Errorf("viewgen: %w", err)
	}
	return n, nil
}
