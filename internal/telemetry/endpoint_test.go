package telemetry

import (
	"strings"
	"testing"
)

func TestEndpointURL(t *testing.T) {
	good := map[string]string{
		"http://collector:4318":          "http://collector:4318/v1/traces",
		"http://collector:4318/":         "http://collector:4318/v1/traces",
		"https://otel.example.com":       "https://otel.example.com/v1/traces",
		"HTTPS://otel.example.com":       "https://otel.example.com/v1/traces",
		"collector:4318":                 "http://collector:4318/v1/traces",
		"127.0.0.1:4318":                 "http://127.0.0.1:4318/v1/traces",
		"[::1]:4318":                     "http://[::1]:4318/v1/traces",
		"https://otel.example.com/otlp/": "https://otel.example.com/otlp/",
		"http://c:4318/custom/v1/traces": "http://c:4318/custom/v1/traces",
	}
	for in, want := range good {
		got, err := endpointURL(in)
		if err != nil || got != want {
			t.Errorf("endpointURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}

	bad := map[string]string{
		"":                          "empty",
		"   ":                       "empty",
		"ftp://collector:21":        "scheme",
		"grpc://collector:4317":     "scheme",
		"http://":                   "no host",
		"http://:4318":              "no host",
		"collector:port":            "port",
		"http://collector:0":        "port",
		"collector:99999":           "port",
		"http://collector:4318?x=1": "query",
		"http://collector:4318#f":   "fragment",
		"http://col lector:4318":    "invalid",
		"://collector":              "scheme",
	}
	for in, why := range bad {
		_, err := endpointURL(in)
		if err == nil {
			t.Errorf("endpointURL(%q) accepted", in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, why) {
			t.Errorf("endpointURL(%q) = %q; want it to say %q", in, msg, why)
		}
		if strings.TrimSpace(in) != "" && !strings.Contains(msg, strings.TrimSpace(in)) {
			t.Errorf("endpointURL(%q) = %q; want it to name the value", in, msg)
		}
	}
}

func TestEndpointURLHidesPassword(t *testing.T) {
	_, err := endpointURL("https://user:s3cret@otel.example.com")
	if err == nil {
		t.Fatal("credentials in the URL accepted")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the password", err)
	}
	if !strings.Contains(err.Error(), "otel.example.com") {
		t.Errorf("error %q does not name the endpoint", err)
	}
}
