// Package archtest holds the import-rules test: it keeps the seams between
// heddle's packages (docs/architecture.md, Packages) by failing when a
// package imports or links what its place in the layout forbids, and when
// the repository's root holds an entry the layout does not name
// (docs/architecture.md, The top level).
package archtest
