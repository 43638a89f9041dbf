// Package creative renders the ad markup (bid.adm) of rtbd's dynamic
// retargeting ads from product masters: a self-contained HTML banner, an
// OpenRTB Native 1.2 response, or a VAST document from a campaign's
// template.
//
// # Banner
//
// AppendBanner writes one HTML document sized to the slot: inline CSS in a
// <style> element, no script, no external resource but the product images.
// Each product is a cell with its image, title and price (the list price
// struck through beside the sale price when there is one), linked through
// the click URL the Linker gives (rtbd's signed /click). A BaseLinker's
// shared part (rtbd's click token) is written once, as the document's
// <base href>, and each link is relative to it; the same <base> opens
// every link in a new browsing context (target=_blank, said once; without
// a base URL there is no <base> and each link says it). Cells
// carry no class: the style sheet selects them by position (.pg>a, a i
// for the title, a b for the price). The layout follows
// the size: a grid (300x250: 2x2), a strip (728x90: 5 in a
// row), a column (160x600: 4 stacked) or a single product (320x50); when
// there are more products than cells, the extra pages scroll sideways
// (CSS scroll snapping, still no script).
//
// A CellCache keeps the markup of product cells from one banner to the
// next (all of a cell but its link, which is per bid), keyed by product
// pointer: for stores that hand out the same immutable products, as the
// local index's hot cache does. A 15-product banner renders 2.5x faster
// from it (BenchmarkBanner15).
//
// Every text from the catalog is HTML-escaped (& < > " ' as html.EscapeString
// does, NUL and invalid UTF-8 become U+FFFD); image URLs must be http or https
// (others are left out) and are attribute-escaped; sizes are numbers rtbd
// writes. Nothing from a product can end an element or an attribute.
//
// # Native
//
// ParseNative reads imp.native.request (Native 1.0-1.2 request JSON, bare
// or wrapped in {"native":...}); AppendNative fills its assets from the
// first product: title, main image and icon, and data assets (sponsored by,
// description, price, sale price, display URL, call to action), honouring
// asset ids, lengths and minimum image sizes. A required asset it cannot
// fill (a video asset, a logo, a rating...) is ErrUnfillable; optional ones
// are left out. The response is wrapped in {"native":...} when the request
// was.
//
// # VAST
//
// AppendVAST fills a campaign's VAST template: the placeholders
// {{CLICK_URL}}, {{IMAGE_URL}}, {{LANDING_URL}}, {{TITLE}}, {{PRICE}} and
// {{ADVERTISER}} become the first product's values, XML-escaped. Video is
// only ever served from such a template. For a secure imp (VAST.Secure),
// {{LANDING_URL}} of an http landing page is the click URL instead.
//
// # Impression trackers
//
// With an ImpURL (rtbd's /imp), every format carries it: a native response
// as a Native 1.2 event tracker (event 1, method 1) when the request lists
// eventtrackers, else as a Native 1.1 imptrackers entry; a VAST document
// as an <Impression> (CDATA) before the template's first <Impression>, or
// where one belongs when it has none; a banner as a 1x1 image.
//
// # Allocations and concurrency
//
// The Append functions write into the caller's buffer and allocate nothing
// once it has grown (AppendNative allocates nothing either; ParseNative
// decodes JSON and does allocate). All functions are safe for concurrent
// use; a NativeRequest is owned by one goroutine at a time.
package creative
