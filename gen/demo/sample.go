package demo

import (
	"bytes"
	"fmt"
	"strings"
)

// SampleRequest returns the demo's sample bid request: OpenRTB 2.6 JSON for
// one 300x250 banner on a site, from a desktop in the USA, for user
// demo-user-1 (user.buyeruid and user.id), tmax 100 ms, prices in currency.
// The demo campaigns cover every group, size, country and device type, and
// demo-user-1 has viewed in-stock products, so the demo bidder bids on it.
// Its imp is not secure ("secure": 0): the demo serves plain http on
// loopback (bidder.public_url http://127.0.0.1:8080, no
// secure_public_url), and a secure imp would get no bid (nbr 509).
func SampleRequest(currency string) []byte {
	if currency == "" {
		currency = DefaultCurrency
	}
	currency = strings.ToUpper(currency)
	return []byte(fmt.Sprintf(`{
  "id": "demo-request-1",
  "imp": [
    {
      "id": "1",
      "banner": {
        "w": 300,
        "h": 250,
        "format": [{"w": 300, "h": 250}],
        "pos": 1
      },
      "bidfloor": 0.01,
      "bidfloorcur": %q,
      "secure": 0
    }
  ],
  "site": {
    "id": "demo-site-1",
    "name": "Example News",
    "domain": "news.example.com",
    "page": "https://news.example.com/articles/1",
    "cat": ["IAB12"],
    "publisher": {"id": "demo-publisher-1", "name": "Example Media", "domain": "example.com"}
  },
  "device": {
    "ua": "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    "ip": "203.0.113.7",
    "devicetype": 2,
    "os": "macOS",
    "language": "en",
    "geo": {"country": "USA", "region": "CA", "type": 2}
  },
  "user": {"id": "demo-user-1", "buyeruid": "demo-user-1"},
  "at": 1,
  "tmax": 100,
  "cur": [%q],
  "regs": {"coppa": 0, "gdpr": 0}
}
`, currency, currency))
}

// readme is DIR/README.txt.
func readme(r *Result, o Options, listen string) []byte {
	var b bytes.Buffer
	pixel := strings.TrimSuffix(bidURL(listen), "/openrtb2/bid") + "/event?pg=1&pid=1&ev=view"
	fmt.Fprintf(&b, `rtbd demo environment
=====================

Written by: rtbd gen -demo -out %s -products %d -groups %d -users %d -seed %d -currency %s
The same command writes the same content (the index version name aside).

What is here
  %-20s synthetic product feed: %d products in groups 1..%d (id i is in group 1 + (i-1) %% %d)
  %-20s the feed's product index (rtbd ingest; catalog.data)
  %-20s the bidder's data directory (bidder.data_dir)
  %-20s user profiles (Pebble): demo-user-1 .. demo-user-%d, each with
  %-20s 5-40 viewed and 10-30 recommended in-stock products in 1-3 groups
  %-20s campaigns covering every product group, the common banner sizes
  %-20s and native, every country and device type (bidder.campaigns)
  %-20s the configuration pointing at all of the above (absolute paths)
  %-20s an OpenRTB 2.6 banner request (300x250) for demo-user-1

Run the bidder
  rtbd -config %s

Ask it for a bid (in another terminal)
  %s

Record a product view for a user (the tracking pixel; the uid is rtbd's
uid cookie, as a browser sends it; without one, rtbd sets a new uid and
records nothing)
  curl -s -b 'rtbd_uid=demo-user-1' '%s'

More users for the same feed (with the bidder stopped: it holds the store)
  rtbd gen -users 100000 -data %s -products %d -groups %d -seed %d
`, shellQuote(r.Dir), o.Products, o.Groups, o.Users, o.Seed, o.Currency,
		FeedFile, o.Products, o.Groups, o.Groups,
		CatalogDir+"/",
		BidderDir+"/",
		BidderDir+"/"+UsersDir+"/", o.Users, "",
		CampaignsFile, "",
		ConfigFile,
		SampleRequestFile,
		shellQuote(r.Config),
		r.Curl,
		pixel,
		shellQuote(r.BidderData), o.Products, o.Groups, o.Seed)
	return b.Bytes()
}
