package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of fedop's types.
	GroupVersion = schema.GroupVersion{Group: "fedop.io", Version: "v1alpha1"}

	// SchemeBuilder registers fedop's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds fedop's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
