// Package bench runs heddle's benchmark workloads, each next to a ceiling measured in the same run, and writes their figures as JSON and SVG.
package bench
