package resttls_test

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/flink-operator/flink-operator/test/pki"
)

// The layers of a PFX (RFC 7292) as a forger rewrites them: each kept as raw bytes except the
// parameters it changes.
type craftContentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type craftPFX struct {
	Version  int
	AuthSafe craftContentInfo
	MacData  struct {
		Mac struct {
			Algorithm pkix.AlgorithmIdentifier
			Digest    []byte
		}
		MacSalt    []byte
		Iterations int
	}
}

type craftEncryptedData struct {
	Version int
	Info    struct {
		ContentType asn1.ObjectIdentifier
		Algorithm   pkix.AlgorithmIdentifier
		Content     []byte `asn1:"tag:0,optional"`
	}
}

type craftSafeBag struct {
	ID         asn1.ObjectIdentifier
	Value      asn1.RawValue   `asn1:"tag:0,explicit"`
	Attributes []asn1.RawValue `asn1:"set,optional"`
}

type craftShroudedKey struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type craftPBES2 struct {
	Kdf pkix.AlgorithmIdentifier
	Enc pkix.AlgorithmIdentifier
}

type craftPBKDF2 struct {
	Salt       asn1.RawValue
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	Prf        pkix.AlgorithmIdentifier `asn1:"optional"`
}

var (
	craftOIDData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	craftOIDEncryptedData = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 6}
	craftOIDShroudedKey   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
)

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	out, err := asn1.Marshal(v)
	require.NoError(t, err)
	return out
}

func mustUnmarshal(t testing.TB, data []byte, v any) {
	t.Helper()
	rest, err := asn1.Unmarshal(data, v)
	require.NoError(t, err)
	require.Empty(t, rest)
}

// withPBES2Iterations sets the PBKDF2 iteration count of PBES2 parameters.
func withPBES2Iterations(t testing.TB, alg pkix.AlgorithmIdentifier, iterations int) pkix.AlgorithmIdentifier {
	var p craftPBES2
	mustUnmarshal(t, alg.Parameters.FullBytes, &p)
	var kdf craftPBKDF2
	mustUnmarshal(t, p.Kdf.Parameters.FullBytes, &kdf)
	kdf.Iterations = iterations
	p.Kdf.Parameters = asn1.RawValue{FullBytes: mustMarshal(t, kdf)}
	alg.Parameters = asn1.RawValue{FullBytes: mustMarshal(t, p)}
	return alg
}

// withInnerIterations rewrites a PBMAC1-protected PKCS12 store (go-pkcs12's Modern2026) so
// that its encrypted contents (encrypted) or its shrouded key (key) ask for iterations PBKDF2
// rounds, and computes its MAC again: a forger knowing the store's password (a tenant writing
// its own store and password) makes a store the decoder authenticates and then decrypts.
func withInnerIterations(t testing.TB, p12 []byte, password string, encrypted, key bool, iterations int) []byte {
	t.Helper()
	var pfx craftPFX
	mustUnmarshal(t, p12, &pfx)
	var authSafe []byte
	mustUnmarshal(t, pfx.AuthSafe.Content.Bytes, &authSafe)
	var infos []craftContentInfo
	mustUnmarshal(t, authSafe, &infos)
	for i, ci := range infos {
		switch {
		case ci.ContentType.Equal(craftOIDEncryptedData) && encrypted:
			var ed craftEncryptedData
			mustUnmarshal(t, ci.Content.Bytes, &ed)
			ed.Info.Algorithm = withPBES2Iterations(t, ed.Info.Algorithm, iterations)
			infos[i].Content = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: mustMarshal(t, ed)}
		case ci.ContentType.Equal(craftOIDData) && key:
			var data []byte
			mustUnmarshal(t, ci.Content.Bytes, &data)
			var bags []craftSafeBag
			mustUnmarshal(t, data, &bags)
			for j, bag := range bags {
				if bag.ID.Equal(craftOIDShroudedKey) {
					var sk craftShroudedKey
					mustUnmarshal(t, bag.Value.Bytes, &sk)
					sk.Algorithm = withPBES2Iterations(t, sk.Algorithm, iterations)
					bags[j].Value = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: mustMarshal(t, sk)}
				}
			}
			infos[i].Content = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: mustMarshal(t, mustMarshal(t, bags))}
		}
	}
	authSafe = mustMarshal(t, infos)
	pfx.AuthSafe.Content = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: mustMarshal(t, authSafe)}

	// PBMAC1 (RFC 9579): HMAC-SHA-256 keyed by PBKDF2-HMAC-SHA-256 of the UTF-8 password.
	var mac craftPBES2 // PBMAC1 parameters: the KDF, then the MAC algorithm
	mustUnmarshal(t, pfx.MacData.Mac.Algorithm.Parameters.FullBytes, &mac)
	var kdf craftPBKDF2
	mustUnmarshal(t, mac.Kdf.Parameters.FullBytes, &kdf)
	macKey, err := pbkdf2.Key(sha256.New, password, kdf.Salt.Bytes, kdf.Iterations, kdf.KeyLength)
	require.NoError(t, err)
	h := hmac.New(sha256.New, macKey)
	h.Write(authSafe)
	pfx.MacData.Mac.Digest = h.Sum(nil)
	return mustMarshal(t, pfx)
}

// pbmac1Stores are a truststore and a keystore protected by PBMAC1, with few iterations.
func pbmac1Stores(t testing.TB) (trust, keys []byte) {
	ca := pki.NewCA(t, "FlinkCA")
	leaf := ca.Issue(t, "jm")
	enc := pkcs12.Modern2026.WithIterations(1000)
	trust, err := enc.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	require.NoError(t, err)
	keys, err = enc.Encode(leaf.Key, leaf.Cert, []*x509.Certificate{ca.Cert}, password)
	require.NoError(t, err)
	return trust, keys
}

// TestCraftedStoresPassTheMAC: the rewriting leaves a store whose MAC the decoder accepts, so
// it goes on to derive the decryption key with the rewritten count (the key then differs, so
// the decryption fails, but only once the rounds are spent).
func TestCraftedStoresPassTheMAC(t *testing.T) {
	trust, keys := pbmac1Stores(t)
	_, err := pkcs12.DecodeTrustStore(withInnerIterations(t, trust, password, true, false, 1001), password)
	require.ErrorIs(t, err, pkcs12.ErrDecryption)
	_, _, _, err = pkcs12.DecodeChain(withInnerIterations(t, keys, password, false, true, 1001), password)
	require.Error(t, err)
	// Decrypted with the wrong key, the bag fails its padding check, except about one time in
	// 256, when the garbage happens to end in valid padding and fails as a private key instead.
	// Either way the decoder got past the MAC and spent the rounds.
	assert.Regexp(t, `error decrypting PKCS#8 shrouded key bag|error unmarshaling decrypted private key`, err.Error())
}
