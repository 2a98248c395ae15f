// Package archtest holds the import-rules test: it keeps the seams between
// heddle's packages (docs/architecture.md, Packages) by failing when a
// package imports or links what its place in the layout forbids.
package archtest
