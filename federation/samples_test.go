package federation_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// TestSamplesAreValid decodes every FederationCluster under config/samples
// strictly (no unknown field) and has the host's API server validate it
// (schema, defaults and CEL rules) with a dry-run create.
func TestSamplesAreValid(t *testing.T) {
	env, _ := federationEnv(t)
	ns := setupNamespace(t, env, "samples")
	files, err := filepath.Glob("../config/samples/*.yaml")
	require.NoError(t, err)
	more, err := filepath.Glob("../config/samples/*/*.yaml")
	require.NoError(t, err)
	files = append(files, more...)
	require.GreaterOrEqual(t, len(files), 2, "the TiDB-like sample and the etcd sample")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var fc v1alpha1.FederationCluster
			require.NoError(t, yaml.UnmarshalStrict(data, &fc), "decoding %s", f)
			fc.Namespace = ns
			assert.NoError(t, env.Host.Client.Create(context.Background(), &fc, client.DryRunAll), "the API server refuses %s", f)
		})
	}
}
