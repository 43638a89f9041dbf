// Package userstores opens the user store a configuration names
// (configs.Config.UserStoreKind: the embedded Pebble store in
// bidder.data_dir/users, Redis at redis.addr or Aerospike at
// aerospike.hosts) with the user section's expiries (user.ttl,
// user.match_ttl) and caps (user.max_groups,
// user.max_products_per_group). The bidder process, `rtbd gen -demo` and
// `rtbd users recommend` open their user store through Open, so the three
// make the choice, check it and report it the same way.
package userstores
