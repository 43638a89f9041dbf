package configs

import "testing"

// TestBidderImageResizeURL checks bidder.image_resize_url's rules.
func TestBidderImageResizeURL(t *testing.T) {
	checkSettings(t, []setting{
		{"bidder.image_resize_url", "", ""},
		{"bidder.image_resize_url", "https://img.example/resize?w={w}&h={h}&u={url}", ""},
		{"bidder.image_resize_url", "http://img.example/{w}x{h}/{url}", ""},
		{"bidder.image_resize_url", "img.example/resize?w={w}&h={h}&u={url}", "bidder.image_resize_url: must start with http:// or https://"},
		{"bidder.image_resize_url", "https://img.example/resize?w={w}&u={url}", "bidder.image_resize_url: must have {w} and {h}, and {url} once"},
		{"bidder.image_resize_url", "https://img.example/resize?w={w}&h={h}&u={url}&v={url}", "bidder.image_resize_url: must have {w} and {h}, and {url} once"},
		{"bidder.image_resize_url", "https://img.example/resize?w={width}&h={h}&u={url}", "bidder.image_resize_url: only {w}, {h} and {url} may be in braces"},
		{"bidder.image_resize_url", "https://img.example/resize?w={w}&h={h}&u=\"{url}\"", "bidder.image_resize_url: must have no spaces, quotes"},
	})
}
