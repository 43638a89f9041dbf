package creative

import (
	"math"
	"strconv"

	"github.com/prebid/openrtb/v20/native1"
	nreq "github.com/prebid/openrtb/v20/native1/request"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

// iconScale: an icon asset gets the product image as it is only when the
// image is at most this many times the size asked on each side (a HiDPI
// screen's 2x); a larger one is resized (Native.Resize) or the asset is
// not filled. The catalog's images are product pictures, main images.
const iconScale = 2

// maxResizeSide bounds the size asked of the resize service.
const maxResizeSide = 10000

// appendImage appends image asset a filled from product p's image; false
// when it cannot be filled:
//
//   - types: main (3) and unspecified (0) get the product image; icon (1)
//     gets it only when it is icon-sized (iconScale); logo (2) and other
//     types are not filled (the catalog has no logos);
//   - the image fits when it is at least wmin x hmin, or at least w x h
//     with the same aspect ratio within 5% (imageFits);
//   - an image that does not fit, with Native.Resize set, is served
//     through it at w x h (else wmin x hmin, a missing side from the
//     image's aspect ratio);
//   - img.w/h state the real size of what is served: the catalog's size
//     of the product image (left out when the catalog does not know it),
//     or the size asked of the resize service.
func appendImage(dst []byte, a *nreq.Asset, p *catalogpb.Product, n *Native, head func([]byte) []byte) ([]byte, bool) {
	img := a.Img
	icon := img.Type == native1.ImageAssetTypeIcon
	if img.Type != native1.ImageAssetTypeMain && !icon && img.Type != 0 {
		return dst, false // logos and exchange-specific types: none in the catalog
	}
	if !IsHTTPURL(p.ImageUrl) {
		return dst, false
	}
	pw, ph := int64(p.Width), int64(p.Height)
	if imageFits(img, pw, ph) && (!icon || iconSized(img, pw, ph)) {
		dst = head(dst)
		dst = append(dst, `,"img":{"url":`...)
		dst = rtb.AppendStringHTML(dst, p.ImageUrl)
		if pw > 0 && ph > 0 {
			dst = appendWH(dst, pw, ph)
		}
		return append(dst, `}}`...), true
	}
	if n.Resize == nil {
		return dst, false
	}
	w, h, ok := resizeSize(img, pw, ph)
	if !ok {
		return dst, false
	}
	dst = head(dst)
	dst = append(dst, `,"img":{"url":`...)
	dst = n.Resize.appendJSON(dst, w, h, p.ImageUrl)
	dst = appendWH(dst, w, h)
	return append(dst, `}}`...), true
}

func appendWH(dst []byte, w, h int64) []byte {
	dst = append(dst, `,"w":`...)
	dst = strconv.AppendInt(dst, w, 10)
	dst = append(dst, `,"h":`...)
	return strconv.AppendInt(dst, h, 10)
}

// imageFits reports whether an image of pw x ph pixels fits img: img asks
// no size; or it is at least wmin x hmin (when either is given); or at
// least w x h (when either is given) and, when both are, of w/h's aspect
// ratio within 5%. An image of unknown size (0) fits only an img that asks
// no size.
func imageFits(img *nreq.Image, pw, ph int64) bool {
	w, h, wmin, hmin := max(img.W, 0), max(img.H, 0), max(img.WMin, 0), max(img.HMin, 0)
	if w == 0 && h == 0 && wmin == 0 && hmin == 0 {
		return true
	}
	if pw <= 0 || ph <= 0 {
		return false
	}
	if (wmin > 0 || hmin > 0) && pw >= wmin && ph >= hmin {
		return true
	}
	if w == 0 && h == 0 || pw < w || ph < h {
		return false
	}
	return w == 0 || h == 0 || aspectWithin(pw, ph, w, h)
}

// aspectWithin reports whether pw/ph is within 5% of w/h.
func aspectWithin(pw, ph, w, h int64) bool {
	got, want := float64(pw)/float64(ph), float64(w)/float64(h)
	return math.Abs(got-want) <= 0.05*want
}

// iconSized reports whether a pw x ph image is at most iconScale times the
// size img asks (w x h, else wmin x hmin) on each side it asks.
func iconSized(img *nreq.Image, pw, ph int64) bool {
	rw, rh := img.W, img.H
	if rw <= 0 && rh <= 0 {
		rw, rh = img.WMin, img.HMin
	}
	return (rw <= 0 || (pw+iconScale-1)/iconScale <= rw) && (rh <= 0 || (ph+iconScale-1)/iconScale <= rh)
}

// resizeSize is the size to ask the resize service for: w x h when img
// gives both, else wmin x hmin, a missing side derived from the product
// image's aspect ratio (pw x ph); false when there is nothing to go by or
// a side is over maxResizeSide.
func resizeSize(img *nreq.Image, pw, ph int64) (int64, int64, bool) {
	w, h := img.W, img.H
	if (w <= 0 || h <= 0) && (img.WMin > 0 || img.HMin > 0) {
		w, h = img.WMin, img.HMin
	}
	w, h = max(w, 0), max(h, 0)
	if w > maxResizeSide || h > maxResizeSide {
		return 0, 0, false
	}
	switch {
	case w > 0 && h > 0:
	case w > 0 && pw > 0 && ph > 0:
		h = (w*ph + pw - 1) / pw
	case h > 0 && pw > 0 && ph > 0:
		w = (h*pw + ph - 1) / ph
	default:
		return 0, 0, false
	}
	if w <= 0 || h <= 0 || w > maxResizeSide || h > maxResizeSide {
		return 0, 0, false
	}
	return w, h, true
}
