/* ps-lite's ps/simple_app.h: SimpleApp, the base of the key-value apps (ps/kv_app.h). */
#ifndef PSB_PSLITE_SIMPLE_APP_H
#define PSB_PSLITE_SIMPLE_APP_H

#include "ps/kv_app.h"

#endif /* PSB_PSLITE_SIMPLE_APP_H */
