package rtb

import "errors"

// RequestError reports a bid request that rtbd must answer with a no-bid
// (HTTP 204 or a BidResponse with nbr). Field is the JSON path of the
// offending field when Validate knows it ("imp[2].id", "tmax"); for a JSON
// value of the wrong type it is the Go struct and field ("Banner.W"); else
// it is empty. Msg is a
// short description. Neither Field nor Msg carries request content beyond the
// names of known OpenRTB fields, but both are for logs and debugging only:
// use NBR.String() as a metric label, never Field or Msg.
type RequestError struct {
	NBR   NoBidReason
	Field string
	Msg   string
}

// Error implements error.
func (e *RequestError) Error() string {
	if e.Field == "" {
		return "rtb: invalid request: " + e.Msg
	}
	return "rtb: invalid request: " + e.Field + ": " + e.Msg
}

func invalid(field, msg string) *RequestError {
	return &RequestError{NBR: NoBidInvalidRequest, Field: field, Msg: msg}
}

// Errors of AppendResponse.
var (
	// ErrResponseFloat: a float field (bid price) is NaN or infinite.
	ErrResponseFloat = errors.New("rtb: response: NaN or infinite number")
	// ErrResponseExt: an ext field holds invalid JSON.
	ErrResponseExt = errors.New("rtb: response: ext is not valid JSON")
)

// Errors of DecryptPrice. Compare with errors.Is.
var (
	// ErrPriceLength: the encrypted price does not decode to 28 bytes.
	ErrPriceLength = errors.New("rtb: encrypted price: bad length")
	// ErrPriceBase64: the encrypted price is not web-safe base64.
	ErrPriceBase64 = errors.New("rtb: encrypted price: bad base64")
	// ErrPriceSignature: the integrity signature does not match (wrong keys or tampered value).
	ErrPriceSignature = errors.New("rtb: encrypted price: signature mismatch")
	// ErrPriceNegative: the price is negative.
	ErrPriceNegative = errors.New("rtb: price: negative")
)
