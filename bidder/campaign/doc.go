// Package campaign is the bidder's campaigns: the campaigns.yaml format, its
// parsing and validation, the targeting index the bid path matches requests
// against, and hot reload of the file.
//
// # Use
//
//	w, err := campaign.NewWatcher("configs/campaigns.yaml", log, reg) // fails on a bad first file
//	defer w.Close()
//	// per imp of a bid request, on the hot path:
//	set := w.Current()                        // one atomic load; the Set is immutable
//	buf = set.Match(req, imp, userSegments, now, buf[:0], nil) // 0 allocations with cap(buf) >= set.Len()
//	for _, c := range buf {
//		price := c.BidMicros(req, now)         // CPM micros of c.Currency
//		dealID, floor, floorCur, viaDeal := set.MatchDeal(c, imp)
//		w, h, isBanner := c.BannerSize(imp)
//		...
//	}
//
// Debug mode passes a *Rejections to Match to learn why each campaign did
// not match (one of the Reason constants each). Money is int64 micros
// (millionths of the currency unit) everywhere. Campaigns built in code
// (tests, `rtbd gen`) become a Set through NewSet, and a file through
// Marshal (package demo builds the demo environment's). Campaigns
// from any other source (rows of a table) are Specs, the file's items as Go
// values: Compile validates them into a Set with Parse's checks and
// messages.
//
// # File format
//
// YAML, snake_case keys; a top-level "campaigns" list (an empty file is
// rejected: write "campaigns: []" for none). Unknown keys are errors, as are
// duplicate keys, wrong types and bad values; Parse reports every problem
// at once, each with its key path and line:
//
//	campaigns[2].creative.sizes[1]: "300y250" is not WxH (such as 300x250) (line 40)
//	campaigns[0].targeting.contries: unknown key (did you mean "countries"?) (line 12)
//
// A complete example with every key (required keys: id, adomain,
// product_group_id, status, bid_cpm, creative.template, and one of
// creative.sizes, creative.native, creative.vast):
//
//	campaigns:
//	  - id: summer-sale-jp              # letters, digits, - _ . : (<= 64); unique
//	    name: Summer sale, Japan         # optional
//	    advertiser: Example Shop         # optional
//	    adomain: [shop-example.com]      # bid.adomain; at least one
//	    cat: [IAB22, IAB22-4]            # bid.cat, IAB content taxonomy 1.0
//	    product_group_id: 1122           # catalog product group (> 0)
//	    status: active                   # active | paused
//	    start: 2026-07-01                # RFC 3339 or YYYY-MM-DD (midnight in time_zone); optional
//	    end: 2026-08-31                  # a date includes that whole day; optional
//	    time_zone: Asia/Tokyo            # IANA; for flight dates, dayparts, hour multipliers; default UTC
//	    currency: JPY                    # ISO 4217, any case; default USD
//	    bid_cpm: 180.5                   # CPM in currency units, up to 6 decimals (exact)
//	    strategy:
//	      type: multiplier               # fixed (default) | multiplier
//	      device_type: {mobile: 1.2, pc: 0.8}  # names or adcom1 numbers 1-8
//	      country: {JP: 1.1}             # alpha-2 or alpha-3
//	      hour: {"18": 1.3, "19": 1.3}   # 0-23 in time_zone
//	    daily_budget: 50000              # currency units; 0 or absent = unlimited
//	    total_budget: 1500000
//	    frequency_cap: {impressions: 3, period: 24h}  # Go duration or days (7d)
//	    pacing: even                     # even (default: a lower price when ahead) | asap
//	    bid_shading: auto                # auto (default): shade first-price bids | off
//	    targeting:                       # every list optional: absent = any
//	      site_domains: [example.com, news.example.jp]  # and their subdomains
//	      site_domains_deny: [bad.example.com]
//	      app_bundles: [com.example.app, "628677149"]
//	      app_bundles_deny: [com.example.bad]
//	      publisher_ids: ["8953", pub-1]
//	      countries: [JPN, KR]           # device.geo.country; alpha-2 or alpha-3
//	      regions: [JP-13, "27"]         # device.geo.region; JP-13 also matches 13 in JPN
//	      device_types: [mobile, pc, 7]  # mobile also matches phone and tablet
//	      os: [iOS, android]             # case-insensitive
//	      user_segments: [auto-intender, "12341318394918"]
//	      dayparts:                      # in time_zone; end_hour exclusive
//	        - {days: [mon, tue, wed, thu, fri], start_hour: 8, end_hour: 22}
//	        - {days: [sat, sun], start_hour: 22, end_hour: 2}  # past midnight
//	    creative:
//	      template: medium               # light | medium | heavy: 3 | 15 | 30 products
//	      sizes: ["300x250", "728x90", "320x50"]
//	      native: true                   # serves OpenRTB Native 1.2
//	      vast: <VAST version="4.0"></VAST>  # optional VAST template: serves video
//	      video: {mimes: [video/mp4], protocols: [7], duration: 15, plcmt: [1, 2], size: 640x360}  # optional: what the vast ad is
//	      click_base: https://shop-example.com/lp  # optional landing base URL
//	      attr: [1]                      # optional bid.attr (creative attributes), checked against battr
//	    deals: [AB-Agency1-0001]         # pmp deal ids the campaign bids on
//	    deals_only: false                # true: bid only through one of deals
//	    seat: Agency1                    # optional buyer seat; checked against wseat/bseat
//	    bundle: com.example.shop         # optional advertised app; checked against bapp
//	    dsa: {behalf: Shop Example Ltd, paid: Agency1 GmbH}  # EU DSA transparency, each <= 100 bytes (bidder/dsa)
//	    supply: {complete_only: true, max_hops: 3, authorized_only: true}  # supply paths (bidder/supply); absent: any
//	  - id: retargeting-us
//	    adomain: [shop-example.com]
//	    product_group_id: 7
//	    status: paused
//	    bid_cpm: 1.25
//	    creative: {template: light, sizes: ["300x250"]}
//
// # Matching
//
// Set.Match lists the campaigns eligible for one imp; its comment has the
// rules (status, flight, dayparts, media and sizes, deals and private
// auctions, site/app/publisher allow and deny lists, geo, device, os, user
// segments, and the request's bcat, badv, bapp, wseat and bseat). Matching
// data is built once per Set (domain and id sets, a weekly hour mask per
// campaign), so Match allocates nothing.
//
// # Reload
//
// Watcher re-reads the file on change (fsnotify on its directory, debounced,
// plus a poll), swaps in the new Set atomically when valid, and keeps the
// old one, logging every problem, when not.
// Package pgsource is the other source: a PostgreSQL table read whole
// every interval, its rows decoded with DecodeSpec and compiled with Compile.
//
// Time zones come from the system's zoneinfo; a binary that may run without
// it (scratch or distroless images) should import _ "time/tzdata" in main.
//
// # Concurrency
//
// A Set and its Campaigns are immutable and safe for concurrent use. The
// *openrtb2.BidRequest and *openrtb2.Imp passed to Match are only read.
package campaign
