package bidder

// EnsureDefaults gives each zero field of o its default, as New does,
// and returns what is missing or invalid (New's errors, unwrapped).
func (o *Options) EnsureDefaults() error { return o.ensureDefaults() }
