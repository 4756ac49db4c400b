package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestHostRequestsNameThePlugin: the command NewCommand builds reaches the
// host with the plugin's User-Agent (version.UserAgent), not client-go's
// default. The host here answers every request with 500; only the header
// is of interest.
func TestHostRequestsNameThePlugin(t *testing.T) {
	var (
		mu     sync.Mutex
		agents []string
	)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.UserAgent())
		mu.Unlock()
		http.Error(w, "no API here", http.StatusInternalServerError)
	}))
	defer host.Close()

	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	cmd := NewCommand(streams)
	cmd.SetArgs([]string{"--server", host.URL, "--kubeconfig", "/dev/null", "--request-timeout", "5s", "status", "demo"})
	require.Error(t, cmd.Execute(), "a host that answers 500 is an error")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, agents, "no request reached the host")
	for _, ua := range agents {
		assert.True(t, strings.HasPrefix(ua, "kubectl-fedop/"), "User-Agent %q", ua)
		assert.Contains(t, ua, " fedop/", "User-Agent %q", ua)
	}
}
