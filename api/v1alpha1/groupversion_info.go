package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of fedop's types.
	GroupVersion = schema.GroupVersion{Group: "fedop.io", Version: "v1alpha1"}

	// SchemeBuilder registers fedop's types with a runtime.Scheme. It is
	// apimachinery's builder, not controller-runtime's deprecated
	// scheme.Builder, so that importing the API pulls in no
	// controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds fedop's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers FederationCluster and its list under
// GroupVersion, with the meta/v1 types (ListOptions and the like) a client
// needs there; it is what controller-runtime's scheme.Builder did.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &FederationCluster{}, &FederationClusterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
