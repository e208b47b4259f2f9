// Owners for OpenSSL objects: std::unique_ptr with the object's own free
// function. Included only by the sources that call OpenSSL, which include
// the OpenSSL headers that declare these types themselves.
#ifndef SHOAL_OPENSSL_PTR_H_
#define SHOAL_OPENSSL_PTR_H_

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>

namespace shoal {

template <typename T, void (*Free)(T*)>
struct OpensslFree {
  void operator()(T* p) const { Free(p); }
};

template <typename T, void (*Free)(T*)>
using OpensslPtr = std::unique_ptr<T, OpensslFree<T, Free>>;

// BIO_free returns an int, so it gets a wrapper of the right shape.
inline void BioRelease(BIO* b) { BIO_free(b); }

using PkeyPtr = OpensslPtr<EVP_PKEY, EVP_PKEY_free>;
using PkeyCtxPtr = OpensslPtr<EVP_PKEY_CTX, EVP_PKEY_CTX_free>;
using MdCtxPtr = OpensslPtr<EVP_MD_CTX, EVP_MD_CTX_free>;
using BioPtr = OpensslPtr<BIO, BioRelease>;
using BnPtr = OpensslPtr<BIGNUM, BN_free>;
using X509Ptr = OpensslPtr<X509, X509_free>;
using X509ExtPtr = OpensslPtr<X509_EXTENSION, X509_EXTENSION_free>;
using X509StorePtr = OpensslPtr<X509_STORE, X509_STORE_free>;
using X509StoreCtxPtr = OpensslPtr<X509_STORE_CTX, X509_STORE_CTX_free>;

}  // namespace shoal

#endif  // SHOAL_OPENSSL_PTR_H_
