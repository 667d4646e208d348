#!/bin/bash
set -e
cat > CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.16)
project(geom C)

set(GEOM_PRECISION 6 CACHE STRING "Number of decimals printed by shapecalc")

file(GLOB GEOM_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/geom/*.c)
add_library(geom STATIC ${GEOM_SOURCES})
target_include_directories(geom PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:include>)
target_link_libraries(geom PUBLIC m)

add_executable(shapecalc app/main.c)
target_link_libraries(shapecalc PRIVATE geom)
target_compile_definitions(shapecalc PRIVATE GEOM_PRECISION=${GEOM_PRECISION})
set_target_properties(shapecalc PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

enable_testing()
add_test(NAME smoke
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/check.sh $<TARGET_FILE:shapecalc>
            ${CMAKE_CURRENT_SOURCE_DIR}/tests/sample.txt ${CMAKE_CURRENT_SOURCE_DIR}/tests/sample.expected)

install(TARGETS shapecalc RUNTIME DESTINATION bin)
install(TARGETS geom ARCHIVE DESTINATION lib)
install(FILES include/geom/geom.h DESTINATION include/geom)
CM
cmake -S . -B build
cmake --build build
