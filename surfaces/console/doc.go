// Package console serves harnessd's web console at /ui: server-rendered
// pages (html/template, everything embedded, no external resources) for
// the people who watch and decide: pending approvals with approve and deny
// (one or in bulk) arriving live (Server-Sent Events), durable jobs with
// their logs streamed live and a cancel button, runs with their span
// timelines, writes (revert), approvals and jobs, the agents (clients), the
// policy's rules, the audit log newest first with chain verification, held
// leases and the sandbox's layers; lists filter by repository, state,
// client and time.
//
// # Security
//
//  1. Login: POST /ui/login with the human token (the data dir's token,
//     compared in constant time) opens a session: a random id in an
//     HttpOnly, SameSite=Strict cookie scoped to Path=/ui, kept in memory
//     with an absolute expiry. Every transport needs the login, the unix
//     socket included, as the JSON API's people's endpoints need the token
//     on every transport: no process the daemon started may approve its own
//     request.
//  2. Every state-changing request (approve, deny, bulk decide, cancel a
//     job, revert a write, end a run, verify, logout) is a POST
//     that carries the session's CSRF token, and a POST whose Origin names
//     another host is refused.
//  3. Responses carry a strict Content-Security-Policy (scripts and styles
//     from /ui/static only, no inline code, no framing) and no-store.
//  4. html/template escapes every value. The console shows only what the
//     harness APIs return, which redact secret values; it reads no files.
package console
