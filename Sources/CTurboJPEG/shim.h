/* Only links: every call goes through the NativeJPEG wrapper module. jconfig.h gives LIBJPEG_TURBO_VERSION_NUMBER
   (libjpeg-turbo 2.x has no runtime version call). */
#include <stdio.h>
#include <jconfig.h>
#include <turbojpeg.h>
