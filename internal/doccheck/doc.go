// Package doccheck checks that the repository's Markdown and Go files refer
// only to files the repository holds and to no issue tracker, and that code
// shown in the docs is code the repository builds; its tests run the checks
// over the whole repository.
package doccheck
