package catalog

// MallocArenasNow exposes mallocArenas to the external tests.
var MallocArenasNow = mallocArenas
