package resttls

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
)

// maxPKCS12Iterations bounds the key-derivation rounds of a PKCS12 store's MAC, which
// go-pkcs12 runs before it knows whether the password is right: a count of 2^31 costs
// minutes of CPU per decode. Java writes 10000 by default and OpenSSL 2048.
const maxPKCS12Iterations = 1_000_000

var oidPBMAC1 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 14}

// The outer structure of a PFX (RFC 7292), read only as far as its MAC parameters.
type pfxOuter struct {
	Version  int
	AuthSafe asn1.RawValue
	MacData  pfxMacData `asn1:"optional"`
}

type pfxMacData struct {
	Mac struct {
		Algorithm pkix.AlgorithmIdentifier
		Digest    []byte
	}
	MacSalt    []byte
	Iterations int `asn1:"optional,default:1"`
}

// PBMAC1 (RFC 9579) keeps its own PBKDF2 parameters in the MAC algorithm's parameters.
type pbmac1Params struct {
	Kdf    pkix.AlgorithmIdentifier
	MacAlg pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       asn1.RawValue
	Iterations int
	Rest       asn1.RawValue `asn1:"optional"`
}

// checkPKCS12 refuses a PFX whose MAC asks for more key-derivation rounds than
// maxPKCS12Iterations, before go-pkcs12 runs them.
func checkPKCS12(data []byte) error {
	var pfx pfxOuter
	if _, err := asn1.Unmarshal(data, &pfx); err != nil {
		return fmt.Errorf("not a PFX: %w", err)
	}
	iterations := pfx.MacData.Iterations
	if pfx.MacData.Mac.Algorithm.Algorithm.Equal(oidPBMAC1) {
		var p pbmac1Params
		if _, err := asn1.Unmarshal(pfx.MacData.Mac.Algorithm.Parameters.FullBytes, &p); err != nil {
			return fmt.Errorf("PBMAC1 parameters: %w", err)
		}
		var kdf pbkdf2Params
		if _, err := asn1.Unmarshal(p.Kdf.Parameters.FullBytes, &kdf); err != nil {
			return fmt.Errorf("PBMAC1 key derivation parameters: %w", err)
		}
		iterations = kdf.Iterations
	}
	if iterations > maxPKCS12Iterations {
		return fmt.Errorf("the MAC asks for %d key-derivation iterations: at most %d are allowed", iterations, maxPKCS12Iterations)
	}
	return nil
}
