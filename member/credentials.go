package member

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotations on a registration Secret. kubectl fedop join writes them;
// fedop-manager reads them.
const (
	// AnnotationServiceAccount names, as "<namespace>/<name>", the
	// ServiceAccount in the member whose token the kubeconfig carries.
	// With it, fedop-manager renews the token (TokenRequest, made with
	// the member's current credentials) once RenewFraction of its
	// lifetime has passed; without it, nothing is renewed.
	AnnotationServiceAccount = "fedop.io/service-account"
	// AnnotationTokenDuration is the lifetime a renewed token is
	// requested for, as a Go duration ("24h"). Default: the lifetime of
	// the current token (exp - iat).
	AnnotationTokenDuration = "fedop.io/token-duration"
	// AnnotationNamespaces lists, comma-separated, the member namespaces
	// fedop may use: the member's cache then lists and watches those
	// namespaces only, as a member identity bound by Roles in them
	// (kubectl fedop join --namespaces) cannot list cluster-wide. Empty
	// or absent: every namespace.
	AnnotationNamespaces = "fedop.io/namespaces"
)

// ReasonCredentialsExpiringSoon is State.CredentialsReason when less than
// a tenth of the credentials' lifetime is left and renewing them failed
// (or is not possible: no AnnotationServiceAccount).
const ReasonCredentialsExpiringSoon = "CredentialsExpiringSoon"

// defaultRenewFraction is Options.RenewFraction's default: a token is
// renewed when two thirds of its lifetime have passed, as the kubelet
// rotates projected ServiceAccount tokens at 80% and client certificates
// at 70-90%: early enough for a few failed attempts before it expires.
const defaultRenewFraction = 2.0 / 3

// expiringFraction: less than this fraction of the lifetime left, with
// renewal failing, is reported (ReasonCredentialsExpiringSoon).
const expiringFraction = 0.1

// CredentialsLifetime returns when the credentials of cfg became valid and
// when they expire: the bearer token's iat (else nbf) and exp claims, read
// without verifying the token (only the issuer can; this is a hint for
// renewal and monitoring, never a security decision), else the client
// certificate's NotBefore and NotAfter. ok is false when cfg has neither a
// JWT with exp nor a parsable client certificate; notBefore is zero when
// the token has no iat or nbf.
func CredentialsLifetime(cfg *rest.Config) (notBefore, notAfter time.Time, ok bool) {
	if cfg.BearerToken != "" {
		if nb, na, ok := tokenLifetime(cfg.BearerToken); ok {
			return nb, na, true
		}
	}
	if len(cfg.CertData) > 0 {
		data := cfg.CertData
		for {
			var block *pem.Block
			block, data = pem.Decode(data)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
				return cert.NotBefore, cert.NotAfter, true
			}
		}
	}
	return time.Time{}, time.Time{}, false
}

// tokenLifetime decodes the payload of a JWT (header.payload.signature,
// base64url) and returns its iat (else nbf) and exp claims, in seconds
// since the epoch. ok is false for anything that is not a JWT with exp.
func tokenLifetime(token string) (notBefore, notAfter time.Time, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	var claims struct {
		Exp *int64 `json:"exp"`
		Iat *int64 `json:"iat"`
		Nbf *int64 `json:"nbf"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, time.Time{}, false
	}
	switch {
	case claims.Iat != nil:
		notBefore = time.Unix(*claims.Iat, 0)
	case claims.Nbf != nil:
		notBefore = time.Unix(*claims.Nbf, 0)
	}
	return notBefore, time.Unix(*claims.Exp, 0), true
}

// credentials is what the registry knows of a running member's
// credentials, and of their renewal.
type credentials struct {
	// notBefore and notAfter bound the credentials' lifetime; notAfter is
	// zero when unknown (nothing is renewed or reported then).
	notBefore, notAfter time.Time
	// account is the member ServiceAccount renewal requests tokens for;
	// empty: no renewal.
	account types.NamespacedName
	// duration is the lifetime a renewed token is requested for.
	duration time.Duration
	// renewing is set while a renewal runs; lastAttempt is when the last
	// one started and lastErr why it failed ("" when it did not).
	renewing    bool
	lastAttempt time.Time
	lastErr     string
}

// lifetime is the credentials' whole lifetime; 0 when unknown.
func (c *credentials) lifetime() time.Duration {
	if c.notAfter.IsZero() || c.notBefore.IsZero() || !c.notAfter.After(c.notBefore) {
		return 0
	}
	return c.notAfter.Sub(c.notBefore)
}

// readCredentials returns what secret and cfg, the kubeconfig made of it,
// say of the credentials: their lifetime, and whom renewal asks for a
// token and for how long. A token without iat gets its start from the
// requested duration.
func readCredentials(secret *corev1.Secret, cfg *rest.Config) credentials {
	var c credentials
	c.notBefore, c.notAfter, _ = CredentialsLifetime(cfg)
	if d, err := time.ParseDuration(secret.Annotations[AnnotationTokenDuration]); err == nil && d > 0 {
		c.duration = d
	}
	if c.notBefore.IsZero() && !c.notAfter.IsZero() && c.duration > 0 {
		c.notBefore = c.notAfter.Add(-c.duration)
	}
	if c.duration == 0 {
		c.duration = c.lifetime()
	}
	if ns, name, ok := strings.Cut(secret.Annotations[AnnotationServiceAccount], "/"); ok && ns != "" && name != "" && cfg.BearerToken != "" {
		c.account = types.NamespacedName{Namespace: ns, Name: name}
	}
	return c
}

// namespacesOf returns the namespaces secret's AnnotationNamespaces lists,
// trimmed and without empty entries; nil for every namespace.
func namespacesOf(secret *corev1.Secret) []string {
	var out []string
	for ns := range strings.SplitSeq(secret.Annotations[AnnotationNamespaces], ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// checkCredentials starts the renewal of every running member whose
// credentials are past RenewFraction of their lifetime (one at a time per
// member, at most once per retry interval), and reports those with less
// than a tenth left whose renewal failed: State.CredentialsReason, a log
// line and, once per set of credentials, a Warning event on the Secret.
func (r *Registry) checkCredentials(ctx context.Context) {
	now := r.opts.Clock.Now()
	type due struct {
		name string
		in   *instance
		c    credentials
	}
	var renew []due
	var warn []string
	r.mu.Lock()
	for name, m := range r.members {
		c := &m.creds
		life := c.lifetime()
		if m.inst == nil || life == 0 {
			continue
		}
		left := c.notAfter.Sub(now)
		if left < time.Duration(float64(life)*expiringFraction) && (c.account.Name == "" || c.lastErr != "") {
			msg := fmt.Sprintf("the member's credentials expire at %s", c.notAfter.UTC().Format(time.RFC3339))
			if c.account.Name == "" {
				msg += "; the Secret names no ServiceAccount (" + AnnotationServiceAccount + ") to renew them for: run kubectl fedop join again"
			} else {
				msg += "; renewing them failed: " + c.lastErr
			}
			if m.state.CredentialsReason == "" {
				warn = append(warn, name)
			}
			m.state.CredentialsReason, m.state.CredentialsMessage = ReasonCredentialsExpiringSoon, msg
		}
		retry := min(time.Minute, max(r.opts.ProbePeriod, life/30))
		if c.account.Name == "" || c.renewing || now.Before(c.notBefore.Add(time.Duration(float64(life)*r.opts.RenewFraction))) ||
			(!c.lastAttempt.IsZero() && now.Sub(c.lastAttempt) < retry) {
			continue
		}
		if r.stopped {
			continue
		}
		c.renewing, c.lastAttempt = true, now
		// Added under the lock stopAll takes before it waits: shutdown
		// waits for the renewal.
		r.running.Add(1)
		renew = append(renew, due{name: name, in: m.inst, c: *c})
	}
	r.mu.Unlock()

	log := ctrl.LoggerFrom(ctx)
	for _, name := range warn {
		st := r.State(name)
		log.Info("Member cluster credentials expire soon", "member", name, "message", st.CredentialsMessage)
		r.event(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: name}},
			corev1.EventTypeWarning, ReasonCredentialsExpiringSoon, "Renew", st.CredentialsMessage)
	}
	for _, d := range renew {
		go func() {
			defer r.running.Done()
			err := r.renew(ctx, d.name, d.in, d.c)
			r.mu.Lock()
			if m, ok := r.members[d.name]; ok {
				m.creds.renewing = false
				if m.inst == d.in {
					m.creds.lastErr = ""
					if err != nil {
						m.creds.lastErr = err.Error()
					}
				}
			}
			r.mu.Unlock()
			if err != nil {
				log.Info("Renewing the member cluster's token failed; trying again later", "member", d.name, "error", err.Error())
				r.event(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: d.name}},
					corev1.EventTypeWarning, "RenewalFailed", "Renew", err.Error())
				return
			}
			log.Info("Member cluster token renewed", "member", d.name, "serviceAccount", d.c.account.String())
		}()
	}
}

// errSecretChanged is renew's error when the Secret no longer holds the
// kubeconfig the running cluster was built from.
var errSecretChanged = errors.New("the registration Secret changed since its kubeconfig was loaded")

// renew requests a new token for c.account with the credentials of in
// (the member's running connection), writes it into the kubeconfig of the
// member's registration Secret, checks that the new kubeconfig passes
// ParseKubeconfig and authenticates to the member as that ServiceAccount
// (a SelfSubjectReview), and only then updates the Secret, with the
// resourceVersion it read: the Secret controller then swaps the
// connection (new before old). Nothing is written when any step fails.
func (r *Registry) renew(ctx context.Context, name string, in *instance, c credentials) error {
	if r.client == nil {
		return errors.New("no host client to update the Secret with")
	}
	ctx, cancel := context.WithTimeout(ctx, max(r.opts.SyncTimeout, 10*time.Second))
	defer cancel()
	var secret corev1.Secret
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: name}, &secret); err != nil {
		return fmt.Errorf("reading the registration Secret: %w", err)
	}
	data, key := kubeconfigOf(&secret)
	if data == nil || registrationHash(data, &secret) != in.hash {
		return errSecretChanged
	}

	cfg := rest.CopyConfig(in.cfg)
	cfg.UserAgent = "fedop-member-cluster/" + name
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the member client: %w", err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(c.duration / time.Second))}}
	tr, err := cs.CoreV1().ServiceAccounts(c.account.Namespace).CreateToken(ctx, c.account.Name, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for ServiceAccount %s: %w", c.account, err)
	}

	kc, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	kctx := kc.Contexts[kc.CurrentContext]
	if kctx == nil || kc.AuthInfos[kctx.AuthInfo] == nil {
		return errors.New("the kubeconfig's current context has no user to renew the token of")
	}
	kc.AuthInfos[kctx.AuthInfo].Token = tr.Status.Token
	renewed, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	newCfg, err := ParseKubeconfig(renewed, r.opts.AllowExecKubeconfigs)
	if err != nil {
		return fmt.Errorf("the renewed kubeconfig: %w", err)
	}
	if err := checkIdentity(ctx, newCfg, c.account); err != nil {
		return err
	}

	secret.Data[key] = renewed
	if err := r.client.Update(ctx, &secret); err != nil {
		return fmt.Errorf("updating the registration Secret: %w", err)
	}
	return nil
}

// checkIdentity asks the member who cfg authenticates as (a
// SelfSubjectReview, which every authenticated user may create) and
// returns an error unless it is account.
func checkIdentity(ctx context.Context, cfg *rest.Config, account types.NamespacedName) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the client of the renewed kubeconfig: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("checking the renewed kubeconfig against the member: %w", err)
	}
	want := "system:serviceaccount:" + account.Namespace + ":" + account.Name
	if got := review.Status.UserInfo.Username; got != want {
		return fmt.Errorf("the renewed kubeconfig authenticates as %q, not %q", got, want)
	}
	return nil
}
