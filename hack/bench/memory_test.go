package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestCreateUnrelated checks item 4's unrelated pods: every one created,
// bound round-robin to the nodes, one that exists already taken as it is,
// and the first failed creation returned.
func TestCreateUnrelated(t *testing.T) {
	existing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unrelated-00003", Namespace: namespace}}
	cs := fake.NewClientset(existing)
	nodes := []string{"n0", "n1", "n2"}
	require.NoError(t, createUnrelated(context.Background(), cs, nodes, 20, 4))
	pods, err := cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, pods.Items, 20)
	for _, p := range pods.Items {
		if p.Name == existing.Name {
			continue
		}
		var i int
		_, err := fmt.Sscanf(p.Name, "unrelated-%d", &i)
		require.NoError(t, err)
		assert.Equal(t, nodes[i%len(nodes)], p.Spec.NodeName, p.Name)
		assert.Equal(t, "true", p.Labels[unrelatedLabel], p.Name)
	}

	failing := fake.NewClientset()
	failing.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name == "unrelated-00007" {
			return true, nil, errors.New("refused")
		}
		return false, nil, nil
	})
	err = createUnrelated(context.Background(), failing, nodes, 20, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "creating pod unrelated-00007: refused")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, createUnrelated(ctx, fake.NewClientset(), nodes, 20, 4), context.Canceled)
}
