// Package rtb is rtbd's OpenRTB wire format: decoding and validating bid
// requests, encoding bid responses and no-bids, no-bid reason codes,
// substitution macros, and clearing price decoding (plain and Google-style
// encrypted). It imports nothing of rtbd.
//
// The types are those of github.com/prebid/openrtb/v20 (openrtb2 for
// requests and responses; adcom1, native1 and openrtb3 beside them); this
// package re-exports none of them.
//
// # Hot path
//
// Everything here is built for the bidder's request path (a fasthttp
// handler) and documents its allocations; TestAllocations pins them:
//
//	var req openrtb2.BidRequest // pooled with the handler's state, reused
//	var exts rtb.Exts           // the same
//	if err := dec.DecodeRequestExts(ctx.PostBody(), &req, &exts); err != nil {
//		var re *rtb.RequestError // always, for bad input
//		errors.As(err, &re)      // count re.NBR.String(); answer 204 or
//		buf = rtb.AppendNoBid(buf[:0], req.ID, re.NBR) // req.ID is "" after a JSON error
//	}
//	// ... auction ...
//	buf, err = rtb.AppendResponse(buf[:0], &resp) // pooled buffer, 0 allocations
//
// In detail:
//
//   - DecodeRequest (and Decoder.DecodeRequest with custom Limits) decodes
//     the body with a decoder generated from the openrtb2 types
//     (jsondec_gen.go, by internal/decgen: `make generate`; encoding/json's
//     semantics, case folding of keys included, 2.5-4x faster, and
//     1.05-1.5x faster than github.com/goccy/go-json with half its
//     allocations: see codec_bench_test.go) that checks it in the same
//     pass (size, JSON syntax, UTF-8, nesting depth <= 64, array and string
//     sizes), then runs Validate. Bad input of any kind is a *RequestError
//     with NBR NoBidInvalidRequest, never a panic and never another error
//     type. Allocations: one copy of the body, then one per pointer and
//     slice (11 for the spec's simple banner example, 24 for its mobile
//     example).
//   - DecodeRequestExts is DecodeRequest that also fills an Exts with the ext
//     members a bidder reads (regs.ext's privacy strings and dsa, user.ext's
//     consent, source.ext's 2.5 schain, ext.prebid.currency's rates) in the
//     same pass, with no allocation of its own once the Exts has grown: no
//     ext needs scanning after decoding. A member of the wrong type is
//     ignored, never an error.
//   - PeekTMax and PeekID read one top-level member of a body before it is
//     decoded, with no allocation, for what must cost less than decoding
//     (admission control, the no-bid of a shed request).
//   - AppendResponse and AppendNoBid are hand-written encoders with no
//     allocation, byte-identical to encoding/json with HTML escaping off.
//     An Encoder whose SafeAdM vouches for a bid's adm (JSONSafe: the
//     bidder's banner HTML) copies it without the escaping scan.
//   - DecryptPrice makes no allocation.
//
// # Money
//
// Prices outside openrtb2's float64 fields are int64 micros: millionths of
// the currency unit, so 1.25 USD CPM is 1250000. DecryptPrice returns
// micros; package rtb/money parses, formats and converts them (a plain
// clearing price is money.Parse), and checks currency codes.
//
// # No-bid reasons
//
// NoBidReason covers the OpenRTB 2.6 codes 0-17 and rtbd's own reasons in
// the exchange-specific range 500-508. String gives a fixed, small set of
// metric labels; use it, never RequestError.Field or Msg, as a label.
//
// # Concurrency
//
// All functions are safe for concurrent use; a Decoder is read-only once
// built. The *openrtb2.BidRequest, *openrtb2.BidResponse and byte buffers
// passed in belong to the caller and must not be shared during a call.
package rtb
