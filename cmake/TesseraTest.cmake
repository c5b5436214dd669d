include(GoogleTest)

# tessera_gtest(NAME [SERIAL] SOURCES... LIBS ...): one GoogleTest executable, registered with CTest test
# by test so that the summary counts every case.
# SERIAL: the program's tests measure time or shares of it, so CTest runs them alone.
function(tessera_gtest name)
  cmake_parse_arguments(ARG "SERIAL" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  set(serial FALSE)
  if(ARG_SERIAL)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "TESSERA_BUILD_DIR=${CMAKE_BINARY_DIR}" RUN_SERIAL ${serial})
endfunction()
