// Package supply checks the supply path of a bid request: its supply chain
// (source.schain of OpenRTB 2.6, source.ext.schain of 2.5) against the
// publishers' ads.txt / app-ads.txt files and the advertising systems'
// sellers.json files, as IAB Tech Lab's specifications define them.
//
// # Files
//
// The operator provides the files under one directory (config supply.dir):
//
//	sellers/<advertising system domain>.json   sellers.json of that system
//	ads/<domain>.txt                           ads.txt of a site's domain
//	app-ads/<domain>.txt                       app-ads.txt of an app's developer domain
//
// Store reads them at start and again every supply.refresh_interval
// (Refresh): a file whose size and modification time did not change is
// kept as parsed; a changed one is parsed again. A bad line of an ads.txt
// (or a bad entry of a sellers.json) is skipped, counted and sampled in
// the log, as the ads.txt specification asks; a file that cannot be read
// or is not a sellers.json at all keeps its last good version. Each file
// becomes a Go map keyed by substrings of one string (no per-entry
// allocation at load), and a lookup makes no allocation.
//
// # Authorization
//
// The nodes of a chain go from the inventory's owner (first) to the seller
// of this request (last). A chain is authorized when all of:
//   - the first node's (asi, sid) is in the publisher's ads.txt as DIRECT,
//     and in the asi's sellers.json as a seller of type PUBLISHER or BOTH;
//   - every later node's (asi, sid) is in the publisher's ads.txt as
//     RESELLER, and in its asi's sellers.json as INTERMEDIARY or BOTH;
//   - when the exchange the request came from has a domain
//     (exchanges.NAME.domain), the last node's asi is that domain.
//
// A missing chain, or a file that is missing, cannot be authorized. A
// site's ads.txt is the one of its host (site.domain, else the host of
// site.page), else the one of its registrable domain (public suffix plus
// one label, golang.org/x/net/publicsuffix); an app's is app-ads/ of
// app.publisher.domain, else of app.domain. Index.Check computes one
// Verdict per request (which node failed, and why); Policy, a campaign's
// setting, then decides per campaign (complete_only, max_hops,
// authorized_only).
package supply
