// Where S3 credentials and the region come from: options first, then the
// usual AWS environment variables, then the AWS INI files.
#ifndef SHOAL_S3_CREDENTIALS_H_
#define SHOAL_S3_CREDENTIALS_H_

#include <string>

#include "shoal/origin_options.h"
#include "shoal/s3_signer.h"
#include "shoal/status.h"

namespace shoal {

// InvalidArgument naming every place looked at when no access key and
// secret are found, or when only one of the pair is.
Result<S3Credentials> ResolveCredentials(const OriginOptions& options);

// The signing region: options, AWS_REGION, AWS_DEFAULT_REGION, the config
// file's profile section, then "us-east-1".
std::string ResolveRegion(const OriginOptions& options);

}  // namespace shoal

#endif  // SHOAL_S3_CREDENTIALS_H_
