// Package demoimg draws the product images of the demo catalog: `rtbd gen
// -demo` writes image URLs under the bidder's own PathPrefix, and a bidder
// with bidder.demo_images serves them, so the demo's ads show pictures with
// no network. Each image is a small SVG drawn from the product's group and
// id alone (the same URL always gives the same picture).
package demoimg

import (
	"bytes"
	"strconv"
)

// PathPrefix is where the images are served: PathPrefix + "<group>/<id>.svg".
const PathPrefix = "/demo/img/"

// Ext is the extension of every image URL.
const Ext = ".svg"

// ContentType is the media type of Append's output.
const ContentType = "image/svg+xml"

// Parse returns the group and product id of an image path
// (PathPrefix + "<group>/<id>.svg"); ok is false for any other path.
func Parse(path []byte) (group, id int64, ok bool) {
	rest, found := bytes.CutPrefix(path, []byte(PathPrefix))
	if !found {
		return 0, 0, false
	}
	rest, found = bytes.CutSuffix(rest, []byte(Ext))
	if !found {
		return 0, 0, false
	}
	g, p, found := bytes.Cut(rest, []byte{'/'})
	if !found {
		return 0, 0, false
	}
	group, ok1 := number(g)
	id, ok2 := number(p)
	return group, id, ok1 && ok2
}

// number parses 1 to 18 decimal digits, no sign, no leading zero.
func number(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 || b[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// palette are the background colours; a product's colour, shape and accent
// come from a hash of its group and id.
var palette = [...]string{"#e4572e", "#29335c", "#f3a712", "#669bbc", "#a8c686", "#8e5572", "#1b998b", "#ed6a5a"}

// Append appends the SVG of product id of group to dst: a square picture
// (it scales to any box) with a shape on a coloured ground and the id.
func Append(dst []byte, group, id int64) []byte {
	h := uint64(group)*0x9e3779b97f4a7c15 ^ uint64(id)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	bg := palette[h%uint64(len(palette))]
	fg := palette[(h>>8)%uint64(len(palette))]
	if fg == bg {
		fg = "#ffffff"
	}
	dst = append(dst, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400" width="400" height="400" preserveAspectRatio="xMidYMid slice">`...)
	dst = append(dst, `<rect width="400" height="400" fill="`...)
	dst = append(dst, bg...)
	dst = append(dst, `"/>`...)
	switch (h >> 16) % 3 {
	case 0:
		dst = append(dst, `<circle cx="200" cy="180" r="110" fill="`...)
	case 1:
		dst = append(dst, `<rect x="90" y="70" width="220" height="220" rx="24" fill="`...)
	default:
		dst = append(dst, `<polygon points="200,60 330,290 70,290" fill="`...)
	}
	dst = append(dst, fg...)
	dst = append(dst, `" fill-opacity="0.85"/>`...)
	dst = append(dst, `<text x="200" y="360" font-family="sans-serif" font-size="36" text-anchor="middle" fill="#ffffff">#`...)
	dst = strconv.AppendInt(dst, id, 10)
	return append(dst, `</text></svg>`...)
}
