package creative

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ErrResizeURL is wrapped by ParseResizeURL's errors.
var ErrResizeURL = errors.New("creative: invalid image resize URL template")

// ResizeURL is an image resize service's URL template, such as
// https://img.example/resize?w={w}&h={h}&u={url}: {w} and {h} become the
// size wanted in pixels, {url} the product image's URL percent-encoded
// (every byte but A-Z a-z 0-9 - . _ ~). The service is expected to answer
// an image of exactly that size (cropping or padding as it does). A
// ResizeURL is immutable and safe for concurrent use.
type ResizeURL struct {
	lits  []string // lits[i] comes before hole i; the last one after all holes
	holes []byte   // 'w', 'h' or 'u'
}

// ParseResizeURL parses a template: an absolute http(s) URL with {url}
// once and {w} and {h} at least once each, no other braces, and no
// spaces, quotes, backslashes, < > or non-ASCII characters.
func ParseResizeURL(s string) (*ResizeURL, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"'<>\\`", c) >= 0 {
			return nil, fmt.Errorf("%w: %q has a space, quote, backslash, < >, control or non-ASCII character", ErrResizeURL, s)
		}
	}
	r := &ResizeURL{}
	rest := s
	var n [3]int
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, fmt.Errorf("%w: %q has a } without {", ErrResizeURL, s)
			}
			r.lits = append(r.lits, rest)
			break
		}
		if strings.IndexByte(rest[:i], '}') >= 0 {
			return nil, fmt.Errorf("%w: %q has a } without {", ErrResizeURL, s)
		}
		r.lits = append(r.lits, rest[:i])
		rest = rest[i:]
		switch {
		case strings.HasPrefix(rest, "{w}"):
			r.holes, n[0], rest = append(r.holes, 'w'), n[0]+1, rest[3:]
		case strings.HasPrefix(rest, "{h}"):
			r.holes, n[1], rest = append(r.holes, 'h'), n[1]+1, rest[3:]
		case strings.HasPrefix(rest, "{url}"):
			r.holes, n[2], rest = append(r.holes, 'u'), n[2]+1, rest[5:]
		default:
			return nil, fmt.Errorf("%w: %q: only {w}, {h} and {url} may be in braces", ErrResizeURL, s)
		}
	}
	if n[0] == 0 || n[1] == 0 || n[2] != 1 {
		return nil, fmt.Errorf("%w: %q must have {w} and {h}, and {url} once", ErrResizeURL, s)
	}
	sample := string(r.Append(nil, 100, 100, "https://img.example.com/1.jpg"))
	u, err := url.Parse(sample)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasPrefix(s, u.Scheme+"://") {
		return nil, fmt.Errorf("%w: %q is not an absolute http(s) URL", ErrResizeURL, s)
	}
	return r, nil
}

// Append appends the URL of src resized to w x h.
func (r *ResizeURL) Append(dst []byte, w, h int64, src string) []byte {
	return r.appendURL(dst, w, h, src, false)
}

// appendJSON appends the URL of src resized to w x h as a JSON string
// (the template's & as \u0026, as rtb.AppendStringHTML writes it; the template
// has no other character to escape, and a percent-encoded src none).
func (r *ResizeURL) appendJSON(dst []byte, w, h int64, src string) []byte {
	dst = append(dst, '"')
	return append(r.appendURL(dst, w, h, src, true), '"')
}

// appendURL is Append, with the template's & written as \u0026 when json.
func (r *ResizeURL) appendURL(dst []byte, w, h int64, src string, json bool) []byte {
	lit := func(dst []byte, s string) []byte {
		for json {
			i := strings.IndexByte(s, '&')
			if i < 0 {
				break
			}
			dst = append(dst, s[:i]...)
			dst = append(dst, `\u0026`...)
			s = s[i+1:]
		}
		return append(dst, s...)
	}
	for i, hole := range r.holes {
		dst = lit(dst, r.lits[i])
		switch hole {
		case 'w':
			dst = strconv.AppendInt(dst, w, 10)
		case 'h':
			dst = strconv.AppendInt(dst, h, 10)
		default:
			dst = appendPercent(dst, src)
		}
	}
	return lit(dst, r.lits[len(r.holes)])
}

// appendPercent appends s with every byte but the URL-unreserved ones
// (A-Z a-z 0-9 - . _ ~) percent-encoded.
func appendPercent(dst []byte, s string) []byte {
	const upperHex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&0xF])
	}
	return dst
}
