package v1alpha1_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// TestBoundsMatchTheCRD ties the Max* constants to the bounds the
// kubebuilder markers put into the generated CRD: a marker changed without
// its constant (or the other way round) fails here.
func TestBoundsMatchTheCRD(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/fedop.io_federationclusters.yaml")
	require.NoError(t, err)
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(data, &crd))
	schema := dig(t, crd, "spec", "versions", 0, "schema", "openAPIV3Schema")
	components := dig(t, schema, "properties", "spec", "properties", "components")
	component := dig(t, components, "items", "properties")
	topology := dig(t, component, "topology")

	assert.EqualValues(t, v1alpha1.MaxComponents, dig(t, components, "maxItems"), "spec.components maxItems")
	assert.EqualValues(t, v1alpha1.MaxComponentNameLength, dig(t, component, "name", "maxLength"), "component name maxLength")
	assert.EqualValues(t, v1alpha1.MaxPlacements, dig(t, topology, "maxItems"), "topology maxItems")
	assert.EqualValues(t, v1alpha1.MaxReplicasPerPlacement, dig(t, topology, "items", "properties", "replicas", "maximum"), "replicas maximum")

	// The largest ordinal, and the name budget that keeps pod names DNS
	// labels.
	assert.Equal(t, len(strconv.Itoa(v1alpha1.MaxPlacements*v1alpha1.MaxReplicasPerPlacement-1)), v1alpha1.MaxOrdinalDigits)
	assert.Equal(t, 63-len("--")-v1alpha1.MaxOrdinalDigits, v1alpha1.MaxNameAndComponentLength)
	rule := "size(self.metadata.name) + size(c.name) <= " + strconv.Itoa(v1alpha1.MaxNameAndComponentLength)
	found := false
	for _, v := range dig(t, schema, "x-kubernetes-validations").([]any) {
		found = found || strings.Contains(v.(map[string]any)["rule"].(string), rule)
	}
	assert.True(t, found, "no CEL rule %q", rule)
}

// dig walks obj along path (map keys and list indexes).
func dig(t *testing.T, obj any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := obj.(map[string]any)
			require.True(t, ok, "not a map at %v", p)
			obj, ok = m[k]
			require.True(t, ok, "no key %s", k)
		case int:
			l, ok := obj.([]any)
			require.True(t, ok, "not a list at %v", p)
			obj = l[k]
		}
	}
	return obj
}
