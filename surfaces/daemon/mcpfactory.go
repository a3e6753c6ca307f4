package daemon

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// factoryServers serves the HTTP endpoint's sessions and stateless
// requests from f, each with the toolsets and role its request names
// (?toolsets=…&role=… on the MCP URL, or the Harnessd-Toolsets and
// Harnessd-Role headers: mcpserver.OptionsFromRequest); a bad value is
// INVALID_ARGUMENT naming the valid ones.
func factoryServers(f *mcpserver.Factory) mcpServers {
	return mcpServers{
		session: func(r *http.Request) (*mcp.Server, error) {
			o, err := mcpserver.OptionsFromRequest(r)
			if err != nil {
				return nil, err
			}
			return f.Session(o), nil
		},
		shared: func(r *http.Request) (*mcp.Server, error) {
			o, err := mcpserver.OptionsFromRequest(r)
			if err != nil {
				return nil, err
			}
			return f.Shared(o), nil
		},
		probe: f.Session(mcpserver.Options{}),
	}
}
