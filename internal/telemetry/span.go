package telemetry

import (
	"crypto/sha256"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessd/harnessd/messages"
)

// Span names. Operation spans follow the MCP server convention
// "{mcp.method.name} {gen_ai.tool.name}"; the root span is a GenAI
// invoke_agent span with a fixed, low-cardinality name.
const (
	mcpToolsCall = "tools/call"
	// RootSpanName names every run's root span.
	RootSpanName = "invoke_agent harnessd run"
)

// Attribute keys. The gen_ai.* and mcp.* keys are the OTel GenAI/MCP
// semantic conventions, spelled out because they are still in Development
// and not in the Go semconv packages; error.type is the stable one. MCP
// has no key for the client's clientInfo, hence harnessd.client.*.
const (
	keyToolName      = attribute.Key("gen_ai.tool.name")
	keyOperationName = attribute.Key("gen_ai.operation.name")
	keyMethodName    = attribute.Key("mcp.method.name")
	keySessionID     = attribute.Key("mcp.session.id")
	keyErrorType     = attribute.Key("error.type")

	keyRunID         = attribute.Key("harnessd.run_id")
	keySpanID        = attribute.Key("harnessd.span_id")
	keyInputHash     = attribute.Key("harnessd.input_hash")
	keyRoute         = attribute.Key("harnessd.route")
	keyDecision      = attribute.Key("harnessd.decision")
	keyReceiptID     = attribute.Key("harnessd.receipt_id")
	keyJobID         = attribute.Key("harnessd.job_id")
	keyCheckID       = attribute.Key("harnessd.check_id")
	keyApprovalID    = attribute.Key("harnessd.approval_id")
	keyOutputBytes   = attribute.Key("harnessd.output_bytes")
	keyReadOnly      = attribute.Key("harnessd.read_only")
	keyClientName    = attribute.Key("harnessd.client.name")
	keyClientVersion = attribute.Key("harnessd.client.version")

	keyGoal          = attribute.Key("harnessd.goal")
	keyWorkflowClass = attribute.Key("harnessd.workflow_class")
	keyStatus        = attribute.Key("harnessd.status")
	keyEndReason     = attribute.Key("harnessd.end_reason")
	keyRepoID        = attribute.Key("harnessd.repo_id")
	keyParentRunID   = attribute.Key("harnessd.parent_run_id")

	segmentPrefix = "harnessd.segment."
	counterPrefix = "harnessd.counters."
)

// errorOther is the semconv fallback error.type for a failure without a code.
const errorOther = "_OTHER"

// scope names this package as the instrumentation of every span.
var scope = instrumentation.Scope{Name: "github.com/harnessd/harnessd/internal/telemetry"}

// TraceID is the trace of a run: the first 16 bytes of
// sha256("harnessd-trace\x00"+runID). Deterministic, so spans exported at
// different times (and by different processes) land in the same trace.
func TraceID(runID string) trace.TraceID {
	sum := sha256.Sum256([]byte("harnessd-trace\x00" + runID))
	var id trace.TraceID
	copy(id[:], sum[:])
	return id
}

// SpanID is the OTel id of a harnessd span id (or, for a run's root span,
// of the run id): the first 8 bytes of sha256("harnessd-span\x00"+id).
// Deterministic, so a child can name its parent before the parent is
// exported.
func SpanID(id string) trace.SpanID {
	sum := sha256.Sum256([]byte("harnessd-span\x00" + id))
	var sid trace.SpanID
	copy(sid[:], sum[:])
	return sid
}

// spanContext is the sampled context of span id in the trace of runID.
func spanContext(runID, id string) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    TraceID(runID),
		SpanID:     SpanID(id),
		TraceFlags: trace.FlagsSampled,
	})
}

// operationSpan maps one operation of a run to a server span parented on
// its ParentID, or on the run's root span when it has none.
func operationSpan(s messages.RunSpan, res *resource.Resource) sdktrace.ReadOnlySpan {
	parent := s.ParentID
	if parent == "" {
		parent = s.RunID
	}
	attrs := []attribute.KeyValue{
		keyMethodName.String(mcpToolsCall),
		keyOperationName.String("execute_tool"),
		keyRunID.String(s.RunID),
		keyOutputBytes.Int64(s.OutputBytes),
		keyReadOnly.Bool(s.ReadOnly),
	}
	attrs = appendStrings(attrs,
		pair{keyToolName, s.Op},
		pair{keySpanID, s.SpanID},
		pair{keySessionID, s.Session},
		pair{keyInputHash, s.InputHash},
		pair{keyRoute, s.Route},
		pair{keyDecision, s.Decision},
		pair{keyReceiptID, s.ReceiptID},
		pair{keyJobID, s.JobID},
		pair{keyCheckID, s.CheckID},
		pair{keyApprovalID, s.ApprovalID},
		pair{keyClientName, s.Client.Name},
		pair{keyClientVersion, s.Client.Version},
	)
	for _, name := range slices.Sorted(maps.Keys(s.Segments)) {
		attrs = append(attrs, attribute.Float64(segmentPrefix+name+"_ms", s.Segments[name]))
	}

	var status sdktrace.Status
	errType := s.ErrorCode
	if s.Outcome == "error" {
		status = sdktrace.Status{Code: codes.Error, Description: s.ErrorCode}
		if errType == "" {
			errType = errorOther
		}
	}
	attrs = appendStrings(attrs, pair{keyErrorType, errType})

	name := mcpToolsCall
	if s.Op != "" {
		name += " " + s.Op
	}
	end := s.Start.Add(time.Duration(s.DurationMs * float64(time.Millisecond)))
	return tracetest.SpanStub{
		Name:                 name,
		SpanContext:          spanContext(s.RunID, s.SpanID),
		Parent:               spanContext(s.RunID, parent),
		SpanKind:             trace.SpanKindServer,
		StartTime:            s.Start,
		EndTime:              end,
		Attributes:           attrs,
		Status:               status,
		Resource:             res,
		InstrumentationScope: scope,
	}.Snapshot()
}

// rootSpan maps an ended run to its root span, StartedAt..EndedAt. A run
// that did not end normally (deadline, abandoned) is an error; a child run
// links to its parent run's root span.
func rootSpan(st messages.RunState, res *resource.Resource) sdktrace.ReadOnlySpan {
	end := st.EndedAt
	if end.IsZero() {
		end = st.UpdatedAt
	}
	if end.Before(st.StartedAt) {
		end = st.StartedAt
	}

	attrs := []attribute.KeyValue{
		keyOperationName.String("invoke_agent"),
		keyRunID.String(st.RunID),
	}
	attrs = appendStrings(attrs,
		pair{keyGoal, st.Goal},
		pair{keyWorkflowClass, st.WorkflowClass},
		pair{keyStatus, st.Status},
		pair{keyEndReason, st.EndReason},
		pair{keyRepoID, st.RepoID},
		pair{keyParentRunID, st.ParentRunID},
		pair{keySessionID, st.Caller.Session},
		pair{keyClientName, st.Caller.Client.Name},
		pair{keyClientVersion, st.Caller.Client.Version},
	)
	attrs = append(attrs, counterAttrs(st.Counters)...)

	var status sdktrace.Status
	if st.Status != messages.RunEnded {
		status = sdktrace.Status{Code: codes.Error, Description: st.Status}
		attrs = appendStrings(attrs, pair{keyErrorType, st.Status})
	}

	var links []sdktrace.Link
	if st.ParentRunID != "" {
		links = []sdktrace.Link{{SpanContext: spanContext(st.ParentRunID, st.ParentRunID)}}
	}
	return tracetest.SpanStub{
		Name:                 RootSpanName,
		SpanContext:          spanContext(st.RunID, st.RunID),
		SpanKind:             trace.SpanKindInternal,
		StartTime:            st.StartedAt,
		EndTime:              end,
		Attributes:           attrs,
		Links:                links,
		Status:               status,
		Resource:             res,
		InstrumentationScope: scope,
	}.Snapshot()
}

// counterAttrs names each counter by its JSON name, as run_status shows it.
func counterAttrs(c messages.RunCounters) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int64(counterPrefix+"calls", c.Calls),
		attribute.Int64(counterPrefix+"reads", c.Reads),
		attribute.Int64(counterPrefix+"commands", c.Commands),
		attribute.Int64(counterPrefix+"mutations", c.Mutations),
		attribute.Int64(counterPrefix+"jobs", c.Jobs),
		attribute.Int64(counterPrefix+"checks", c.Checks),
		attribute.Int64(counterPrefix+"output_bytes", c.OutputBytes),
		attribute.Int64(counterPrefix+"approvals", c.Approvals),
		attribute.Int64(counterPrefix+"failures", c.Failures),
		attribute.Int64(counterPrefix+"observations", c.Observations),
		attribute.Int64(counterPrefix+"cpu_ms", c.CPUMs),
	}
}

// pair is a string attribute that is left out when empty.
type pair struct {
	key attribute.Key
	val string
}

// appendStrings appends the non-empty pairs: an absent attribute says
// "unknown" better than an empty one.
func appendStrings(attrs []attribute.KeyValue, pairs ...pair) []attribute.KeyValue {
	for _, p := range pairs {
		if p.val != "" {
			attrs = append(attrs, p.key.String(p.val))
		}
	}
	return attrs
}
