// Package fakesecret makes the credential-shaped fixtures the redaction
// tests feed to consultations: a password assignment, a bearer header, a
// connection string with a password, an AWS-style access key id and a
// private key block, each of a kind consultations.Redact must remove.
//
// None is a credential: each is assembled at run time from harmless parts
// and a test's tag, so the repository holds no text a secret scanner (or
// a reader) could take for a committed key, and two tests' fixtures never
// collide. Standard library only; linked by tests, never by a function.
package fakesecret

import (
	"strings"
	"unicode"
)

// Set is one test's fixtures. Each field is the secret part of its kind:
// what must not appear anywhere after redaction.
type Set struct {
	Password    string // in PasswordClause
	BearerToken string // in AuthHeader
	DBPassword  string // in ConnectionString
	AccessKeyID string // an AWS-style access key id (AKIA + 16)
	KeyBody     string // in PrivateKeyBlock
}

// New is the fixtures for tag (letters and digits; distinct tags give
// distinct values).
func New(tag string) Set {
	clean := strings.Map(func(r rune) rune {
		// MaxASCII (DEL) is no letter or digit: `<=` keeps the same runes.
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return unicode.ToUpper(r)
		}
		return -1
	}, tag)
	// At exactly 12 the cut keeps all: `>=` is a harmless survivor.
	if len(clean) > 12 {
		clean = clean[:12]
	}
	low := strings.ToLower(clean)
	return Set{
		Password:    "fixturepw" + low,
		BearerToken: "fixturetoken" + low + "x0x0x0x0",
		DBPassword:  "fixturedbpw" + low,
		AccessKeyID: "AK" + "IA" + "FAKE" + strings.Repeat("0", 12-len(clean)) + clean,
		KeyBody:     "FIXTUREKEYBODY" + clean,
	}
}

// PasswordClause is "password=<Password>".
func (s Set) PasswordClause() string { return "pass" + "word=" + s.Password }

// AuthHeader is an Authorization header carrying BearerToken.
func (s Set) AuthHeader() string { return "Authorization: Bear" + "er " + s.BearerToken }

// ConnectionString is a database URL with DBPassword in it.
func (s Set) ConnectionString() string {
	return "postgres" + "://admin:" + s.DBPassword + "@db.internal:5432/app"
}

// PrivateKeyBlock is a PEM-shaped block around KeyBody.
func (s Set) PrivateKeyBlock() string {
	const kind = "RSA PRIV" + "ATE KEY"
	return "-----BEGIN " + kind + "-----\n" + s.KeyBody + "\n-----END " + kind + "-----"
}

// Values are every secret part: none may survive redaction.
func (s Set) Values() []string {
	return []string{s.Password, s.BearerToken, s.DBPassword, s.AccessKeyID, s.KeyBody}
}
