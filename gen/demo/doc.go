// Package demo writes rtbd's demo environment (`rtbd gen -demo -out DIR`)
// and demo user profiles (`rtbd gen -users N -data BIDDERDATA`, or
// `-config FILE` for the user store a configuration names; with -demo,
// `-redis ADDR` or `-aerospike HOSTS` (and `-aerospike-namespace NS`) load
// the users into that shared store and write it into DIR/rtbd.yaml). The
// command rtbd gen chooses the form (main); a plain feed is package
// ingest's (ingest/feedgen writes every feed, the demo's too, and the
// ingest builds the demo's index).
//
// A demo directory is complete and deterministic: the same Options write
// the same feed, the same products in the index, the same user profiles and
// the same campaigns (only the index version's name, a timestamp, differs):
//
//	DIR/feed.csv.gz           synthetic product feed (ingest/feedgen)
//	DIR/catalog/              its ingested product index (package catalog's layout)
//	DIR/bidder/users/         user profiles (package bidder/user's Pebble store; none with -redis or -aerospike)
//	DIR/campaigns.yaml        campaigns covering every product group (bidder/campaign)
//	DIR/rtbd.yaml             the effective configuration pointing at all of the above
//	DIR/sample-request.json   an OpenRTB 2.6 banner request the demo bids on
//	DIR/README.txt            what is there and how to run it
//
// Demo users are "demo-user-1" .. "demo-user-N". Each viewed 5-40 in-stock
// products in 1-3 product groups and has 10-30 other in-stock products of
// the same groups recommended, and 1-3 segments from Segments(), all drawn
// from a random stream seeded by (Seed, user number) alone, so user i is the
// same whatever the number of users.
package demo
