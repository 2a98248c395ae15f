// Package temporalhistory reads the JSON history export of Temporal (the
// `temporal workflow show --output json` file, or the Web UI's download) and
// maps its events onto the history events heddle's replay reads.
package temporalhistory
