// Package recommended loads an outside recommender's lists into the user
// profiles: `rtbd users recommend -in FILE` reads JSON Lines, one user per
// line,
//
//	{"uid": "u-123", "recommended": [{"group": 7, "ids": [812, 77, 9]}, {"group": 2, "ids": [5]}]}
//
// and sets each user's Recommended products (per product group, product
// ids best first, as the catalog's product_group_id and product_id) in the
// user store the configuration names (user.store: Pebble, Redis or
// Aerospike), keeping the user's viewed products and segments. An empty
// list ("recommended": []) removes the user's recommendations, so the
// bidder falls back to the products similar to the viewed ones. The write
// is each store's SetRecommended: atomic with the views the bidders record
// meanwhile (neither is lost).
//
// Every line is checked on its own (ParseLine): a line that is not one
// JSON object with exactly the fields uid (a user id user.CheckUID
// accepts) and recommended (groups and ids > 0, no group or id twice, at
// most user.max_groups groups and 100 ids per group) is rejected with its
// number and reason, counted, and the load goes on; blank lines are
// skipped. Lines of one uid are applied in file order.
//
// The embedded store is one process's: while a bidder runs, it holds it.
// Handler is the bidder's admin route POST /admin/users/recommended, which
// streams a request body of the same lines into the bidder's own store,
// and `rtbd users recommend -bidder URL` posts -in to it.
package recommended
