// Package ui serves heddle's web console under /ui/: pages rendered on the server from the node's own HTTP API, called in-process with the signed-in person's token.
//
// # Design
//
// The pages are html/template documents rendered by the server, with one
// small script of our own (static/heddle.js) that refreshes the open page
// and asks before a destructive button is pressed. Everything is embedded
// with embed.FS: there is no CDN, it works offline, and there is no Node
// build step. Without the script the pages still work; they just do not
// refresh themselves.
//
// The UI holds no state and reads no database. Every read and command goes
// to the node's HTTP API handler (Config.API) inside the process, with the
// token the person signed in with as "Authorization: Bearer". So the API's
// own checks decide what a person may see and do, a follower forwards a
// command to the leader as it does for any client, and a token the API
// refuses sends the browser to the sign-in page.
//
// # Pages
//
//	GET  /ui/                        -> /ui/workflows
//	GET  /ui/workflows?q=&status=&type=&queue=&from=&to=&after=&limit=
//	                                 the runs, filtered by the listfilter language
//	GET  /ui/workflow?id=ID          the current run of a workflow id (a redirect)
//	GET  /ui/runs/{job}[?after=]     one run: 100 events of its timeline (the newest, or those
//	                                 after seq after=), pending steps, links, buttons
//	POST /ui/runs/{job}/signal       name, value (JSON)
//	POST /ui/runs/{job}/cancel       reason: a cancel request, which the workflow handles
//	POST /ui/runs/{job}/terminate    reason: ends the run at once
//	POST /ui/runs/{job}/reset        point (FirstWorkflowTask, LastWorkflowTask or an event id),
//	                                 reason, exclude_signals, exclude_updates: a new run from the
//	                                 point (admins); shows the new run's page
//	GET  /ui/cluster                 members, leader, term, indexes, readiness
//	GET  /ui/resources               pools, leases and their steps, waiters, drained resources
//	POST /ui/resources/drain         id, undrain: drain a resource, or undrain it (admins)
//	GET  /ui/review?state=&queue=&after=
//	                                 the tasks awaiting a person across jobs, with their manifests
//	POST /ui/review/{task}/{op}      op approve, reject, resubmit or terminate; reason, expect (a state)
//	GET  /ui/runs/{job}/events/{seq}/payload, /ui/runs/{job}/steps/{step}/question,
//	     /ui/review/{task}/output    a payload's bytes, as an attachment
//	GET  /ui/signin, POST /ui/signin, POST /ui/signout
//	GET  /ui/static/...              the stylesheet and the script
//
// A payload is rendered with internal/payloadview: never decoded into
// values, at most 32 levels deep, 64 KiB of text and 10,000 values. One
// nested deeper is shown as a placeholder with its size, a longer one as
// its start, each with a link to its bytes.
//
// # Sign-in
//
// The token is kept in an HttpOnly, SameSite=Strict cookie scoped to /ui
// (Secure over TLS), so page scripts never see it. Every form carries a
// CSRF token that must equal a second cookie's. Which buttons a page shows
// follows the token's role, which the API tells (GET /v1/whoami): a reader
// gets none, a client or a worker signal, cancel and decide review tasks,
// an admin terminate and reset runs too. Config.Permissions replaces that lookup for an embedding program
// with its own idea of who may do what; the API still refuses what the
// token may not do.
//
// # Live updates
//
// The script fetches the open page again every Config.Refresh (2 s) and
// swaps its content in place, unless the person is typing into a field,
// the tab is hidden, or they unticked "Live". Polling the page itself
// rather than holding a server-sent event stream keeps one code path for
// the first load and every update, and needs nothing of a proxy between
// the browser and the node.
package ui
