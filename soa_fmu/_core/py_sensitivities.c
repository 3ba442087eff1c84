/* soa_fmu._core entry points of the sensitivities family. */
#include "pycore.h"

PyMethodDef soa_py_sensitivities_methods[] = {
    {NULL, NULL, 0, NULL}};
