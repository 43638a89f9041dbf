package rtb

import (
	"errors"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// Default limits (see Limits).
const (
	DefaultMaxBodyBytes   = 512 << 10
	DefaultMaxDepth       = 64
	DefaultMaxElements    = 10000
	DefaultMaxStringBytes = 64 << 10
	DefaultMaxImps        = 100
	DefaultMaxIDBytes     = 256
)

// Limits bounds the requests that a Decoder accepts. A zero field takes its
// default (the DefaultMax constants).
type Limits struct {
	// MaxBodyBytes bounds the request body. Default 512 KiB.
	MaxBodyBytes int
	// MaxDepth bounds the nesting of JSON objects and arrays, checked before
	// decoding. Default and maximum 64.
	MaxDepth int
	// MaxElements bounds the elements of any one JSON array and the members
	// of any one JSON object, anywhere in the body (ext included). Default 10000.
	MaxElements int
	// MaxStringBytes bounds the raw (escaped) length of any one JSON string.
	// Default 64 KiB.
	MaxStringBytes int
	// MaxImps bounds len(imp). Default 100.
	MaxImps int
	// MaxIDBytes bounds the request id and the imp ids. Default 256.
	MaxIDBytes int
}

// defaultLimits returns the limits a zero Limits stands for.
func defaultLimits() Limits {
	return Limits{
		MaxBodyBytes:   DefaultMaxBodyBytes,
		MaxDepth:       DefaultMaxDepth,
		MaxElements:    DefaultMaxElements,
		MaxStringBytes: DefaultMaxStringBytes,
		MaxImps:        DefaultMaxImps,
		MaxIDBytes:     DefaultMaxIDBytes,
	}
}

// withDefaults returns l with each zero (or out of range) field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxDepth <= 0 || l.MaxDepth > maxDepthCap {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultMaxElements
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	if l.MaxImps <= 0 {
		l.MaxImps = DefaultMaxImps
	}
	if l.MaxIDBytes <= 0 {
		l.MaxIDBytes = DefaultMaxIDBytes
	}
	return l
}

// Decoder decodes and validates OpenRTB 2.x bid requests. The zero Decoder
// uses the default Limits. A Decoder is not modified by its methods and is safe
// for concurrent use.
type Decoder struct {
	Limits Limits
}

// DecodeRequest is Decoder{}.DecodeRequest: decoding with the default Limits.
func DecodeRequest(body []byte, req *openrtb2.BidRequest) error {
	return (&Decoder{}).DecodeRequest(body, req)
}

// DecodeRequest resets *req, then decodes the JSON bid request in body into
// it and validates it (see Validate). Any problem is a *RequestError with NBR
// NoBidInvalidRequest: a body too large, not exactly one JSON object, invalid
// UTF-8, nesting, arrays or strings beyond d.Limits, a JSON type that does not
// fit the OpenRTB field, or a request that Validate rejects. It never panics.
//
// The JSON is checked (well-formed, within the limits) as it is decoded, in
// one pass, by a decoder generated from the openrtb2 types (see jsondec.go;
// chosen over encoding/json and github.com/goccy/go-json by
// BenchmarkCodecs: see codec_bench_test.go). It decodes as encoding/json
// does: unknown keys are ignored, and a key in another case than OpenRTB's
// ("Device") matches its field.
//
// Ownership: body is not retained: the strings and ext slices in *req point
// into one private copy of it, owned by *req (keeping any of them alive
// keeps that copy alive). The caller may reuse req for the next request (a
// backing array of req.Imp with room for up to 16 imps is kept, its elements
// zeroed); req must not be used concurrently. After a JSON error *req is reset; after a validation
// error it holds the decoded request, so that req.ID can be echoed in the
// no-bid.
func (d *Decoder) DecodeRequest(body []byte, req *openrtb2.BidRequest) error {
	return d.DecodeRequestExts(body, req, nil)
}

// DecodeRequestExts is DecodeRequest that also fills *exts (when not nil)
// with the ext members the bidder reads, in the same pass (see Exts). It
// resets *exts first; after a JSON error *exts is reset too, after a
// validation error it holds what was decoded. A member of an ext that does
// not fit its Exts field is ignored, never an error.
func (d *Decoder) DecodeRequestExts(body []byte, req *openrtb2.BidRequest, exts *Exts) error {
	lim := d.Limits.withDefaults()
	resetRequest(req)
	if exts != nil {
		exts.Reset()
	}
	if len(body) > lim.MaxBodyBytes {
		return invalid("", "body larger than the limit")
	}
	if i := skipWS(body, 0); i >= len(body) || body[i] != '{' {
		if msg, _ := checkJSON(body, lim.MaxDepth, lim.MaxElements, lim.MaxStringBytes); msg != "" {
			return invalid("", msg)
		}
		return invalid("", "JSON body is not an object")
	}
	if err := unmarshalRequest(body, req, exts, &lim); err != nil {
		resetRequest(req)
		if exts != nil {
			exts.Reset()
		}
		// The decoder stopped at the first problem; checkJSON names a JSON
		// one anywhere in the body first, as if it had run before.
		if msg, _ := checkJSON(body, lim.MaxDepth, lim.MaxElements, lim.MaxStringBytes); msg != "" {
			return invalid("", msg)
		}
		return decodeError(err)
	}
	if exts != nil {
		fixExts(req, exts)
	}
	if err := validate(req, &lim); err != nil {
		return err
	}
	return nil
}

// maxKeptImps bounds the imp array that resetRequest keeps for reuse, so
// that one large request does not make every later reset clear a big array.
const maxKeptImps = 16

// resetRequest zeroes *req, keeping the backing array of req.Imp if small.
func resetRequest(req *openrtb2.BidRequest) {
	imps := req.Imp[:cap(req.Imp)]
	if len(imps) > maxKeptImps {
		imps = nil
	}
	clear(imps)
	*req = openrtb2.BidRequest{Imp: imps[:0]}
}

//go:generate go run ./internal/decgen -out jsondec_gen.go

// unmarshalRequest runs the JSON decoder on body, within lim.
// A panic in the decoder (a bug in it; none is known) becomes an error, so
// that bad input can never crash the bidder.
func unmarshalRequest(body []byte, req *openrtb2.BidRequest, exts *Exts, lim *Limits) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errDecoderPanic
		}
	}()
	return decodeBidRequest(body, req, exts, lim)
}

var errDecoderPanic = errors.New("rtb: JSON decoder panic")

// decodeError maps a JSON decoder error to a *RequestError. For a type
// mismatch Field names the Go struct and field that did not fit
// ("Banner.W", "BidRequest.TMax"): names of known OpenRTB fields, never
// request content.
func decodeError(err error) *RequestError {
	var te *typeError
	if errors.As(err, &te) && te.Field != "" {
		return invalid(te.Struct+"."+te.Field, "wrong JSON type or value out of range")
	}
	return invalid("", "JSON does not fit the OpenRTB bid request")
}
