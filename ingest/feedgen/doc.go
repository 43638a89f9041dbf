// Package feedgen writes deterministic synthetic product feeds in the
// format package feed reads, for `rtbd gen`, tests and benchmarks.
//
// Products are numbered i = 0 .. Products-1. Product i has id StartID+i and
// group id 1 + i%Groups: ids are consecutive and assigned round-robin to
// groups 1..Groups (so group g holds ids StartID+g-1, StartID+g-1+Groups, ...).
// Everything else about product i (title, brand, category, image size,
// prices, stock, updated_at) is drawn from a random stream seeded by (Seed,
// i) alone, so Product(i, opts) is the i-th row without generating the ones
// before it, and the same Options always give byte-identical output. No
// clock is read: updated_at is BaseUpdatedAt plus a per-product offset.
//
// Rows look like a real shop's feed (about 300 bytes of CSV each): titles
// such as "Brand X Organic Cotton Crew T-Shirt - Navy, M", Google product
// taxonomy-like categories, common image sizes (600x600, 1200x628, ...),
// image URLs https://img.example-shop.com/p/<group>/<id>.jpg, landing URLs
// https://www.example-shop.com/g/<group>/item/<id>?utm_source=rtbd, prices
// priced the way shops price in the currency (1980 yen, 19.99 dollars) and a
// sale price on about one row in five.
//
// Two feeds that differ in one field, to check that a new index version is
// visible, come from the same Options with PriceSalt or TitleSuffix changed.
package feedgen
