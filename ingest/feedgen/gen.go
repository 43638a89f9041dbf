package feedgen

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/internal/splitmix"
	"github.com/rtbd/rtbd/rtb/money"
)

// BaseUpdatedAt is the updated_at of the oldest generated product, unix
// seconds (2025-01-01T00:00:00Z). Products are spread over the 30 days after.
const BaseUpdatedAt = 1735689600

const updatedAtSpread = 30 * 86400

// ErrBadOptions is wrapped by every Options.Validate error.
var ErrBadOptions = errors.New("feedgen: bad options")

// Options describe a synthetic feed. Zero values take the documented
// defaults.
type Options struct {
	// Products is the number of products (rows). Must be >= 0.
	Products int
	// Groups is the number of product groups (group ids 1..Groups). 0: 1.
	Groups int
	// Seed selects the feed's content; the same Options give the same bytes.
	Seed int64
	// OutOfStockRatio is the share of products with in_stock=false, 0..1.
	// 0: 0.05; negative: none.
	OutOfStockRatio float64
	// Currency is the ISO 4217 code of every price. "": "JPY".
	Currency string
	// StartID is the first product id. 0: 1.
	StartID int64
	// PriceSalt is added to every list price, in micros (>= 0), so that a
	// second version of a feed differs in price only.
	PriceSalt int64
	// TitleSuffix is appended to every title, so that a second version of a
	// feed differs in title only. At most 200 bytes of text, no control
	// characters, no trailing white space.
	TitleSuffix string
	// ImageBase and ImageExt frame every image URL:
	// ImageBase + "<group>/<id>" + ImageExt. "": DefaultImageBase and
	// DefaultImageExt. ImageBase is an http or https URL ending in "/",
	// without characters that CSV or JSON would quote.
	ImageBase, ImageExt string
}

// Default image URL frame: a shop's image host that does not exist.
const (
	DefaultImageBase = "https://img.example-shop.com/p/"
	DefaultImageExt  = ".jpg"
)

// withDefaults returns o with zero values replaced by defaults.
func (o Options) withDefaults() Options {
	if o.Groups == 0 {
		o.Groups = 1
	}
	if o.OutOfStockRatio == 0 {
		o.OutOfStockRatio = 0.05
	}
	if o.Currency == "" {
		o.Currency = "JPY"
	}
	o.Currency = strings.ToUpper(o.Currency)
	if o.StartID == 0 {
		o.StartID = 1
	}
	if o.ImageBase == "" {
		o.ImageBase = DefaultImageBase
	}
	if o.ImageExt == "" {
		o.ImageExt = DefaultImageExt
	}
	return o
}

// plainURLText reports whether s needs no quoting in a CSV field or a JSON
// string: printable ASCII without '"', ',', '\\' or a space.
func plainURLText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == '\\' {
			return false
		}
	}
	return true
}

// Validate returns every problem with o (after defaults), each naming its
// option, joined; nil if o is usable.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...))
	}
	if o.Products < 0 {
		bad("products: must be >= 0, got %d", o.Products)
	}
	if o.Groups < 0 {
		bad("groups: must be >= 0, got %d", o.Groups)
	}
	if math.IsNaN(o.OutOfStockRatio) || o.OutOfStockRatio > 1 {
		bad("out_of_stock_ratio: must be <= 1, got %v", o.OutOfStockRatio)
	}
	if _, ok := money.Code(o.Currency); !ok {
		bad("currency: %q is not a known ISO 4217 code", o.Currency)
	}
	if o.StartID < 0 {
		bad("start_id: must be >= 0, got %d", o.StartID)
	} else if o.Products > 0 && o.StartID > math.MaxInt64-int64(o.Products)+1 {
		bad("start_id: %d + %d products overflows int64", o.StartID, o.Products)
	}
	if !(strings.HasPrefix(o.ImageBase, "https://") || strings.HasPrefix(o.ImageBase, "http://")) ||
		!strings.HasSuffix(o.ImageBase, "/") || !plainURLText(o.ImageBase) {
		bad("image_base: must be an http(s) URL ending in / without spaces, quotes, commas or backslashes, got %q", o.ImageBase)
	}
	if !plainURLText(o.ImageExt) || strings.Contains(o.ImageExt, "/") {
		bad("image_ext: must be plain text without / (e.g. .jpg), got %q", o.ImageExt)
	}
	if o.PriceSalt < 0 || o.PriceSalt > 1<<60 {
		bad("price_salt: must be 0 .. 2^60 micros, got %d", o.PriceSalt)
	}
	if s := o.TitleSuffix; s != "" {
		switch {
		case len(s) > 200:
			bad("title_suffix: longer than 200 bytes")
		case !utf8.ValidString(s):
			bad("title_suffix: not valid UTF-8")
		case strings.TrimRight(s, " \t\r\n\v\f") != s:
			bad("title_suffix: ends with white space (the feed reader would trim it)")
		case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }) >= 0:
			bad("title_suffix: contains a control character")
		}
	}
	return errors.Join(errs...)
}

// spec is product i as indexes into the word lists plus numbers; rendering
// it needs no randomness.
type spec struct {
	id, group                           int64
	cat, noun, mat, adj, color, variant int
	brand, s1, s2, size                 int
	price, sale, updatedAt              int64
	inStock                             bool
}

// makeSpec draws product i. o must have defaults applied.
func makeSpec(i int, o *Options, cur currencyInfo) spec {
	r := splitmix.Rand{S: splitmix.Mix(uint64(o.Seed)) ^ splitmix.Mix(uint64(i)^0x5851f42d4c957f2d)}
	s := spec{id: o.StartID + int64(i), group: 1 + int64(i%o.Groups)}
	s.cat = r.IntN(len(categories))
	c := &categories[s.cat]
	s.noun = r.IntN(len(c.nouns))
	s.mat = r.IntN(len(c.materials))
	s.variant = r.IntN(len(c.variants))
	s.adj = r.IntN(len(adjectives))
	s.color = r.IntN(len(colors))
	s.brand = r.IntN(len(brands))
	s.s1 = r.IntN(len(sentences))
	s.s2 = -1 // one sentence, sometimes two
	if r.IntN(4) == 0 {
		s.s2 = (s.s1 + 1 + r.IntN(len(sentences)-1)) % len(sentences)
	}
	s.size = r.IntN(len(imageSizes))

	cents := c.lo + int64(r.Uint64()%uint64(c.hi-c.lo+1))
	raw := cents * cur.perCent
	price := raw/cur.round*cur.round - cur.ending
	if price <= 0 {
		price = cur.round - cur.ending
	}
	if r.IntN(5) == 0 { // on sale: 60..90% of the list price
		sale := price * int64(60+r.IntN(31)) / 100 / cur.minor * cur.minor
		if sale > 0 && sale < price {
			s.sale = sale
		}
	}
	s.price = price + o.PriceSalt
	s.inStock = r.Float64() >= o.OutOfStockRatio
	s.updatedAt = BaseUpdatedAt + int64(r.IntN(updatedAtSpread))
	return s
}

func (s *spec) appendTitle(dst []byte, suffix string) []byte {
	c := &categories[s.cat]
	dst = append(dst, brands[s.brand]...)
	dst = append(dst, ' ')
	dst = append(dst, adjectives[s.adj]...)
	dst = append(dst, ' ')
	dst = append(dst, c.materials[s.mat]...)
	dst = append(dst, ' ')
	dst = append(dst, c.nouns[s.noun]...)
	dst = append(dst, " - "...)
	dst = append(dst, colors[s.color]...)
	dst = append(dst, ", "...)
	dst = append(dst, c.variants[s.variant]...)
	return append(dst, suffix...)
}

func (s *spec) appendDescription(dst []byte) []byte {
	c := &categories[s.cat]
	dst = append(dst, adjectives[s.adj]...)
	dst = append(dst, ' ')
	dst = appendLower(dst, c.materials[s.mat])
	dst = append(dst, ' ')
	dst = appendLower(dst, c.nouns[s.noun])
	dst = append(dst, " by "...)
	dst = append(dst, brands[s.brand]...)
	dst = append(dst, ", in "...)
	dst = appendLower(dst, colors[s.color])
	dst = append(dst, ". "...)
	dst = append(dst, sentences[s.s1]...)
	if s.s2 >= 0 {
		dst = append(dst, ' ')
		dst = append(dst, sentences[s.s2]...)
	}
	return dst
}

// appendLower appends s with ASCII letters lowered.
func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func (s *spec) appendImageURL(dst []byte, o *Options) []byte {
	dst = append(dst, o.ImageBase...)
	dst = strconv.AppendInt(dst, s.group, 10)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, s.id, 10)
	return append(dst, o.ImageExt...)
}

func (s *spec) appendLandingURL(dst []byte) []byte {
	dst = append(dst, "https://www.example-shop.com/g/"...)
	dst = strconv.AppendInt(dst, s.group, 10)
	dst = append(dst, "/item/"...)
	dst = strconv.AppendInt(dst, s.id, 10)
	return append(dst, "?utm_source=rtbd"...)
}

// Product returns product i (0-based) of the feed opts describes, exactly as
// feed.Reader reads it back from Write's output. i need not be below
// opts.Products. opts is not validated (see Options.Validate).
func Product(i int, opts Options) catalogpb.Product {
	o := opts.withDefaults()
	if o.Groups <= 0 {
		o.Groups = 1
	}
	s := makeSpec(i, &o, currencyFor(o.Currency))
	sz := imageSizes[s.size]
	return catalogpb.Product{
		ProductId:       s.id,
		ProductGroupId:  s.group,
		Title:           string(s.appendTitle(nil, o.TitleSuffix)),
		Description:     string(s.appendDescription(nil)),
		ImageUrl:        string(s.appendImageURL(nil, &o)),
		Width:           sz[0],
		Height:          sz[1],
		LandingUrl:      string(s.appendLandingURL(nil)),
		PriceMicros:     s.price,
		SalePriceMicros: s.sale,
		Currency:        o.Currency,
		Category:        categories[s.cat].path,
		Brand:           brands[s.brand],
		InStock:         s.inStock,
		UpdatedAt:       s.updatedAt,
	}
}

// Header is the CSV header line Write emits.
const Header = "id,group_id,title,description,image_url,width,height,landing_url,price,sale_price,currency,category,brand,in_stock,updated_at\n"

// flushAt is the buffered size at which Write hands bytes to w.
const flushAt = 256 << 10

// Write writes the feed opts describes to w in format (feed.CSV: header +
// one row per product; feed.JSONL: one object per product, no header) and
// returns the number of product rows handed to w. Invalid opts are an error
// wrapping ErrBadOptions, before anything is written. Output depends on opts
// only: the same opts give the same bytes.
func Write(w io.Writer, format feed.Format, opts Options) (n int, err error) {
	if err := opts.Validate(); err != nil {
		return 0, err
	}
	if format != feed.CSV && format != feed.JSONL {
		return 0, fmt.Errorf("%w: format must be csv or jsonl, got %v", ErrBadOptions, format)
	}
	o := opts.withDefaults()
	cur := currencyFor(o.Currency)
	buf := make([]byte, 0, flushAt+4096)
	var scratch []byte
	if format == feed.CSV {
		buf = append(buf, Header...)
	}
	pending := 0
	for i := 0; i < o.Products; i++ {
		s := makeSpec(i, &o, cur)
		if format == feed.CSV {
			buf, scratch = appendCSVRow(buf, scratch, &s, &o)
		} else {
			buf, scratch = appendJSONRow(buf, scratch, &s, &o)
		}
		pending++
		if len(buf) >= flushAt {
			if _, err := w.Write(buf); err != nil {
				return n, err
			}
			n += pending
			pending = 0
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return n, err
		}
	}
	return n + pending, nil
}

func appendCSVRow(buf, scratch []byte, s *spec, o *Options) ([]byte, []byte) {
	sz := imageSizes[s.size]
	buf = strconv.AppendInt(buf, s.id, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, s.group, 10)
	buf = append(buf, ',')
	scratch = s.appendTitle(scratch[:0], o.TitleSuffix)
	buf = appendCSVField(buf, scratch)
	buf = append(buf, ',')
	scratch = s.appendDescription(scratch[:0])
	buf = appendCSVField(buf, scratch)
	buf = append(buf, ',')
	buf = s.appendImageURL(buf, o)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, int64(sz[0]), 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, int64(sz[1]), 10)
	buf = append(buf, ',')
	buf = s.appendLandingURL(buf)
	buf = append(buf, ',')
	buf = money.Append(buf, s.price)
	buf = append(buf, ',')
	if s.sale > 0 {
		buf = money.Append(buf, s.sale)
	}
	buf = append(buf, ',')
	buf = append(buf, o.Currency...)
	buf = append(buf, ',')
	buf = appendCSVField(buf, categories[s.cat].path)
	buf = append(buf, ',')
	buf = appendCSVField(buf, brands[s.brand])
	buf = append(buf, ',')
	buf = strconv.AppendBool(buf, s.inStock)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, s.updatedAt, 10)
	return append(buf, '\n'), scratch
}

// appendCSVField appends f, quoted if it holds a comma, quote or line break.
func appendCSVField[T string | []byte](dst []byte, f T) []byte {
	needs, quotes := false, false
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case ',', '\n', '\r':
			needs = true
		case '"':
			needs, quotes = true, true
		}
	}
	if !needs {
		return append(dst, f...)
	}
	dst = append(dst, '"')
	if !quotes {
		dst = append(dst, f...)
		return append(dst, '"')
	}
	for i := 0; i < len(f); i++ {
		if f[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, f[i])
	}
	return append(dst, '"')
}

func appendJSONRow(buf, scratch []byte, s *spec, o *Options) ([]byte, []byte) {
	sz := imageSizes[s.size]
	buf = append(buf, `{"id":`...)
	buf = strconv.AppendInt(buf, s.id, 10)
	buf = append(buf, `,"group_id":`...)
	buf = strconv.AppendInt(buf, s.group, 10)
	buf = append(buf, `,"title":`...)
	scratch = s.appendTitle(scratch[:0], o.TitleSuffix)
	buf = appendJSONString(buf, scratch)
	buf = append(buf, `,"description":`...)
	scratch = s.appendDescription(scratch[:0])
	buf = appendJSONString(buf, scratch)
	buf = append(buf, `,"image_url":"`...)
	buf = s.appendImageURL(buf, o)
	buf = append(buf, `","width":`...)
	buf = strconv.AppendInt(buf, int64(sz[0]), 10)
	buf = append(buf, `,"height":`...)
	buf = strconv.AppendInt(buf, int64(sz[1]), 10)
	buf = append(buf, `,"landing_url":"`...)
	buf = s.appendLandingURL(buf)
	buf = append(buf, `","price":`...)
	buf = money.Append(buf, s.price)
	if s.sale > 0 {
		buf = append(buf, `,"sale_price":`...)
		buf = money.Append(buf, s.sale)
	}
	buf = append(buf, `,"currency":"`...)
	buf = append(buf, o.Currency...)
	buf = append(buf, `","category":`...)
	buf = appendJSONString(buf, categories[s.cat].path)
	buf = append(buf, `,"brand":`...)
	buf = appendJSONString(buf, brands[s.brand])
	buf = append(buf, `,"in_stock":`...)
	buf = strconv.AppendBool(buf, s.inStock)
	buf = append(buf, `,"updated_at":`...)
	buf = strconv.AppendInt(buf, s.updatedAt, 10)
	return append(buf, "}\n"...), scratch
}

// appendJSONString appends s as a JSON string (s must be valid UTF-8).
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		if c < 0x20 {
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		} else {
			dst = append(dst, '\\', c)
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// WriteFile writes the feed opts describes to path, choosing the format from
// the name (.csv, .jsonl or .ndjson, with .gz for gzip, see
// feed.DetectFormat), atomically: it writes a temporary file in the same
// directory, syncs it and renames it over path, so readers never see a
// partial feed. The file is 0644. gzip output uses gzip.BestSpeed and is
// deterministic too.
func WriteFile(path string, opts Options) error {
	format, err := feed.DetectFormat(path)
	if err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("feedgen: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	var w io.Writer = bw
	var gz *gzip.Writer
	if strings.HasSuffix(strings.ToLower(path), ".gz") {
		gz, _ = gzip.NewWriterLevel(bw, gzip.BestSpeed) // the level is valid
		w = gz
	}
	if _, err := Write(w, format, opts); err != nil {
		return fmt.Errorf("feedgen: writing %s: %w", tmp, err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return fmt.Errorf("feedgen: writing %s: %w", tmp, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("feedgen: writing %s: %w", tmp, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("feedgen: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("feedgen: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("feedgen: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		ok = true // already closed
		return fmt.Errorf("feedgen: %w", err)
	}
	ok = true
	return nil
}
