// Package telemetry exports harnessd's run spans (messages.RunSpan) and
// ended runs (messages.RunState) as OpenTelemetry traces over OTLP/HTTP.
//
// Spans are built from harnessd's own records, not recorded through a
// tracer: every id and timestamp is harnessd's, so a span can be exported
// long after it happened, and a span exported twice is the same span.
//
// # Ids
//
// A run is one trace: [TraceID] of its run id, the first 16 bytes of
// sha256("harnessd-trace\x00"+run_id). A span's id is [SpanID] of its
// harnessd span id, the first 8 bytes of sha256("harnessd-span\x00"+id);
// the run's root span has SpanID(run_id). Neither needs a table, so a
// child names its parent before the parent is exported, and a collector
// groups spans that different processes sent.
//
// # Tree
//
// An operation span's parent is SpanID(parent_id) when it has one (a
// batch step is parented on its batch span) and the run's root span
// otherwise. The root span is exported when the run ends ([Exporter.Run]
// with a status other than active), so until then its children point at
// a parent the backend has not seen yet. A child run (parent_run_id) is a
// trace of its own whose root span carries a link to its parent run's
// root span.
//
// # Operation spans
//
// They follow the OTel MCP server conventions, harnessd being the MCP
// server that executed the tool:
//
//	name                   "tools/call <operation>"
//	kind                   SERVER
//	status                 ERROR, description error_code, when outcome is "error"
//	mcp.method.name        "tools/call"
//	gen_ai.operation.name  "execute_tool"
//	gen_ai.tool.name       operation
//	mcp.session.id         session
//	error.type             error_code ("_OTHER" for an error without one)
//
// and harnessd's own attributes: harnessd.run_id, harnessd.span_id,
// harnessd.input_hash, harnessd.route, harnessd.decision,
// harnessd.receipt_id, harnessd.job_id, harnessd.check_id,
// harnessd.approval_id, harnessd.output_bytes, harnessd.read_only,
// harnessd.segment.<name>_ms for each latency segment, and
// harnessd.client.name/version for the MCP client (MCP's conventions have
// no key for clientInfo). A call's input is never exported, only its hash.
//
// # Root spans
//
// A run's root span, from started_at to ended_at, is a GenAI invoke_agent
// span named [RootSpanName] ("invoke_agent harnessd run"), kind INTERNAL,
// with gen_ai.operation.name "invoke_agent", harnessd.run_id,
// harnessd.goal, harnessd.workflow_class, harnessd.status,
// harnessd.end_reason, harnessd.repo_id, harnessd.parent_run_id,
// harnessd.counters.<name> for each counter, and the caller's
// mcp.session.id and harnessd.client.name/version. A run that did not end
// normally (deadline, abandoned) has status ERROR with its status as the
// description and error.type.
//
// String attributes are left out when empty. The resource carries
// service.name and service.version.
//
// # Export
//
// [Exporter.Span] and [Exporter.Run] never block: they put the span on a
// bounded queue, or drop and count it ([Exporter.Dropped]) when the queue
// is full. One goroutine exports the queue in batches of at most 512
// spans, at the latest BatchTimeout after a batch's first span. Export
// failures are logged at Warn and never reach the callers.
package telemetry
