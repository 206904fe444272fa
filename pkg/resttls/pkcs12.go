package resttls

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
)

// Budget of a PKCS12 store's key derivations. go-pkcs12 runs each derivation (the MAC's, every
// encrypted content's, every shrouded key's) with the iteration count the store names, and a
// count of 2^31 costs minutes of CPU. The MAC's rounds run before the password is known to be
// right; the inner layers' run once the MAC matches, which a tenant writing both its store and
// its password makes it do. What real stores ask for: keytool (Java 17+) 10000 per derivation,
// Java 8 (and keytool -J-Dkeystore.pkcs12.legacy) 100000 for the MAC and 50000 for the
// contents and the key, OpenSSL 2048.
const (
	// maxPKCS12Iterations bounds one derivation.
	maxPKCS12Iterations = 1_000_000
	// maxPKCS12Rounds bounds all of a store's derivations together. PKCS#12's own PBE derives
	// the key and the IV separately, so its rounds count twice; a Java 8 keystore spends 300000.
	maxPKCS12Rounds = 1_000_000
	// maxPKCS12Bags bounds the bags and the contents holding them (as maxJKSEntries does for JKS).
	maxPKCS12Bags = 1000
)

var (
	oidPBMAC1        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 14}
	oidPBES2         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPKCS12PBE     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1} // pbeWithSHAAnd... (RFC 7292 appendix C)
	oidData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidEncryptedData = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 6}
	oidShroudedKey   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
)

// The structure of a PFX (RFC 7292), read as far as the parameters of its key derivations.
type pfxOuter struct {
	Version  int
	AuthSafe pfxContentInfo
	MacData  pfxMacData `asn1:"optional"`
}

type pfxContentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type pfxMacData struct {
	Mac struct {
		Algorithm pkix.AlgorithmIdentifier
		Digest    []byte
	}
	MacSalt    []byte
	Iterations int `asn1:"optional,default:1"`
}

type pfxEncryptedData struct {
	Version int
	Info    struct {
		ContentType asn1.ObjectIdentifier
		Algorithm   pkix.AlgorithmIdentifier
		Content     asn1.RawValue `asn1:"tag:0,optional"`
	}
}

type pfxSafeBag struct {
	ID         asn1.ObjectIdentifier
	Value      asn1.RawValue `asn1:"tag:0,explicit"`
	Attributes asn1.RawValue `asn1:"optional"`
}

type pfxShroudedKey struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      asn1.RawValue
}

// PBMAC1 (RFC 9579) and PBES2 (RFC 8018) both start with their key derivation function.
type pbmac1Params struct {
	Kdf    pkix.AlgorithmIdentifier
	MacAlg pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       asn1.RawValue
	Iterations int
	Rest       asn1.RawValue `asn1:"optional"`
}

// PKCS#12's own PBE parameters.
type pkcs12PBEParams struct {
	Salt       []byte
	Iterations int
}

// checkPKCS12 walks a PFX before go-pkcs12 decodes it and refuses one whose key derivations
// ask for more rounds than the budget allows, or that holds more bags than maxPKCS12Bags.
// Bags inside encrypted contents are seen only once decrypted: keytool and OpenSSL put the
// certificates there and the shrouded key outside, where its derivation is checked here; the
// certificates inside cost only their parsing, which the store's size bounds.
func checkPKCS12(data []byte) error {
	var pfx pfxOuter
	if _, err := asn1.Unmarshal(data, &pfx); err != nil {
		return fmt.Errorf("not a PFX: %w", err)
	}
	b := pkcs12Budget{}
	if err := b.spendMAC(pfx.MacData); err != nil {
		return err
	}
	if !pfx.AuthSafe.ContentType.Equal(oidData) {
		return nil // not password-integrity mode: go-pkcs12 refuses it without deriving anything
	}
	var authSafe []byte
	if _, err := asn1.Unmarshal(pfx.AuthSafe.Content.Bytes, &authSafe); err != nil {
		return fmt.Errorf("authenticated safe: %w", err)
	}
	contents, err := sequenceElements(authSafe, "authenticated safe")
	if err != nil {
		return err
	}
	for i, raw := range contents {
		if err := b.checkContents(i, raw); err != nil {
			return err
		}
	}
	return nil
}

// spendMAC counts the rounds of the store's integrity MAC (PKCS#12's own or PBMAC1), if it has
// one.
func (b *pkcs12Budget) spendMAC(mac pfxMacData) error {
	if len(mac.Mac.Algorithm.Algorithm) == 0 {
		return nil
	}
	iterations := mac.Iterations
	if mac.Mac.Algorithm.Algorithm.Equal(oidPBMAC1) {
		var p pbmac1Params
		if _, err := asn1.Unmarshal(mac.Mac.Algorithm.Parameters.FullBytes, &p); err != nil {
			return fmt.Errorf("PBMAC1 parameters: %w", err)
		}
		var kdf pbkdf2Params
		if _, err := asn1.Unmarshal(p.Kdf.Parameters.FullBytes, &kdf); err != nil {
			return fmt.Errorf("PBMAC1 key derivation parameters: %w", err)
		}
		iterations = kdf.Iterations
	}
	return b.spend("the MAC asks", iterations, 1)
}

// checkContents counts the i-th element of the authenticated safe: the rounds of encrypted
// contents' derivation, or the bags of plain contents.
func (b *pkcs12Budget) checkContents(i int, raw []byte) error {
	var ci pfxContentInfo
	if _, err := asn1.Unmarshal(raw, &ci); err != nil {
		return fmt.Errorf("contents %d: %w", i, err)
	}
	switch {
	case ci.ContentType.Equal(oidEncryptedData):
		var ed pfxEncryptedData
		if _, err := asn1.Unmarshal(ci.Content.Bytes, &ed); err != nil {
			return fmt.Errorf("encrypted contents %d: %w", i, err)
		}
		return b.spendAlgorithm(fmt.Sprintf("the encrypted contents %d ask", i), ed.Info.Algorithm)
	case ci.ContentType.Equal(oidData):
		var safe []byte
		if _, err := asn1.Unmarshal(ci.Content.Bytes, &safe); err != nil {
			return fmt.Errorf("contents %d: %w", i, err)
		}
		return b.checkBags(safe, i)
	}
	return nil
}

// pkcs12Budget counts a store's key-derivation rounds and bags.
type pkcs12Budget struct {
	rounds int64
	bags   int
}

func (b *pkcs12Budget) spend(what string, iterations, times int) error {
	if iterations > maxPKCS12Iterations {
		return fmt.Errorf("%s for %d key-derivation iterations: at most %d are allowed", what, iterations, maxPKCS12Iterations)
	}
	b.rounds += int64(max(iterations, 0)) * int64(times)
	if b.rounds > maxPKCS12Rounds {
		return fmt.Errorf("the store asks for %d key-derivation iterations in all: at most %d are allowed", b.rounds, maxPKCS12Rounds)
	}
	return nil
}

// spendAlgorithm counts the rounds of a PBES2 or PKCS#12 PBE algorithm; go-pkcs12 refuses any
// other without deriving anything.
func (b *pkcs12Budget) spendAlgorithm(what string, alg pkix.AlgorithmIdentifier) error {
	switch {
	case alg.Algorithm.Equal(oidPBES2):
		var p pbmac1Params // PBES2-params: the key derivation, then the encryption scheme
		if _, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil {
			return fmt.Errorf("%s: PBES2 parameters: %w", what, err)
		}
		var kdf pbkdf2Params
		if _, err := asn1.Unmarshal(p.Kdf.Parameters.FullBytes, &kdf); err != nil {
			return fmt.Errorf("%s: PBKDF2 parameters: %w", what, err)
		}
		return b.spend(what, kdf.Iterations, 1)
	case len(alg.Algorithm) == len(oidPKCS12PBE)+1 && alg.Algorithm[:len(oidPKCS12PBE)].Equal(oidPKCS12PBE):
		var p pkcs12PBEParams
		if _, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil {
			return fmt.Errorf("%s: PBE parameters: %w", what, err)
		}
		return b.spend(what, p.Iterations, 2) // the key and the IV are derived apart
	}
	return nil
}

// checkBags counts the bags of a plain safe and the rounds of its shrouded keys.
func (b *pkcs12Budget) checkBags(safe []byte, contents int) error {
	bags, err := sequenceElements(safe, fmt.Sprintf("contents %d", contents))
	if err != nil {
		return err
	}
	for i, raw := range bags {
		b.bags++
		if b.bags > maxPKCS12Bags {
			return fmt.Errorf("more than %d bags: at most %d are allowed", maxPKCS12Bags, maxPKCS12Bags)
		}
		var bag pfxSafeBag
		if _, err := asn1.Unmarshal(raw, &bag); err != nil {
			return fmt.Errorf("contents %d bag %d: %w", contents, i, err)
		}
		if !bag.ID.Equal(oidShroudedKey) {
			continue
		}
		var key pfxShroudedKey
		if _, err := asn1.Unmarshal(bag.Value.Bytes, &key); err != nil {
			return fmt.Errorf("contents %d key bag %d: %w", contents, i, err)
		}
		if err := b.spendAlgorithm(fmt.Sprintf("the key bag %d asks", i), key.Algorithm); err != nil {
			return err
		}
	}
	return nil
}

// sequenceElements splits a DER SEQUENCE into its elements' encodings, one at a time, so a
// count is checked before anything is decoded into structures.
func sequenceElements(der []byte, what string) ([][]byte, error) {
	var seq asn1.RawValue
	if _, err := asn1.Unmarshal(der, &seq); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return nil, fmt.Errorf("%s: not a SEQUENCE", what)
	}
	var out [][]byte
	for rest := seq.Bytes; len(rest) > 0; {
		if len(out) == maxPKCS12Bags {
			return nil, fmt.Errorf("%s: more than %d elements: at most %d are allowed", what, maxPKCS12Bags, maxPKCS12Bags)
		}
		var el asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &el); err != nil {
			return nil, fmt.Errorf("%s element %d: %w", what, len(out), err)
		}
		out = append(out, el.FullBytes)
	}
	return out, nil
}
