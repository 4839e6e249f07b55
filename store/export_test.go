package store

// BenchSearch is benchSearch for the external tests (store_test), which
// cannot be in package store: they use internal/scalegen, which imports it.
var BenchSearch = benchSearch
