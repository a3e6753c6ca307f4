package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// tracesPath is the OTLP/HTTP path of traces, added to an endpoint
// without a path.
const tracesPath = "/v1/traces"

// endpointURL checks an Options.Endpoint and returns the full URL spans
// are posted to. "host:port" means http. otlptracehttp would silently fall
// back to localhost:4318 on a URL it cannot parse, so everything it would
// drop or misread is refused here instead.
func endpointURL(endpoint string) (string, error) {
	if strings.TrimSpace(endpoint) == "" {
		return "", errors.New("otlp endpoint is empty: want http://host:port, https://host or host:port")
	}
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("otlp endpoint %q: %v", endpoint, err)
	}
	bad := func(why string) error {
		return fmt.Errorf("otlp endpoint %q: %s", endpoint, why)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("scheme must be http or https")
	case u.User != nil:
		// Do not echo a password back into logs.
		return "", fmt.Errorf("otlp endpoint %q: credentials in the URL; pass them in Headers", u.Redacted())
	case u.Hostname() == "":
		return "", bad("no host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", bad("query or fragment not allowed")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", bad("port must be 1-65535")
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = tracesPath
	}
	return u.String(), nil
}
