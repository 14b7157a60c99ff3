// Tests of device indices and lists as `kiln bench --devices` and SessionOptions::device take
// them (runtime/device_list.h), on made-up device names: no GPU needed.
#include "runtime/device_list.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace kiln {
namespace {

const std::vector<std::string> kTwoGpus = {"NVIDIA H200", "NVIDIA H100 80GB HBM3"};

std::string parse_error(const std::string& spec, const std::vector<std::string>& names) {
  try {
    parse_device_list(spec, names);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST(DeviceListTest, AllListsEveryDeviceInOrder) {
  EXPECT_EQ(parse_device_list("all", kTwoGpus), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_list("all", {"NVIDIA H200"}), (std::vector<int>{0}));
}

TEST(DeviceListTest, IndicesInTheOrderGiven) {
  EXPECT_EQ(parse_device_list("0,1", kTwoGpus), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_list("1,0", kTwoGpus), (std::vector<int>{1, 0}));
  EXPECT_EQ(parse_device_list("1", kTwoGpus), (std::vector<int>{1}));
}

TEST(DeviceListTest, AnIndexTheMachineLacksNamesItsDevices) {
  EXPECT_EQ(parse_error("0,3", kTwoGpus),
            "device list '0,3': no CUDA device 3: this machine has 2 (0: NVIDIA H200, "
            "1: NVIDIA H100 80GB HBM3)");
}

TEST(DeviceListTest, EntriesThatAreNotIndicesAreNamed) {
  for (const std::string spec : {"", "0,", ",1", "0,,1", "x", "-1", "0;1", "1.5", " 1", "ALL"}) {
    const std::string message = parse_error(spec, kTwoGpus);
    EXPECT_NE(message.find("is not a device index (give 'all' or indices such as 0,1)"),
              std::string::npos)
        << spec << ": " << message;
  }
  EXPECT_EQ(parse_error("0,x", kTwoGpus),
            "device list '0,x': 'x' is not a device index (give 'all' or indices such as 0,1)");
}

TEST(DeviceListTest, ADeviceListedTwiceIsAnError) {
  EXPECT_EQ(parse_error("1,0,1", kTwoGpus), "device list '1,0,1': device 1 is listed twice");
}

TEST(DeviceListTest, IndicesAreParsedWithoutKnowingTheDevices) {
  EXPECT_EQ(parse_device_indices("7,2"), (std::vector<int>{7, 2}));
  EXPECT_THROW(parse_device_indices("all"), InputError);
  EXPECT_THROW(parse_device_indices("2,2"), InputError);
}

TEST(DeviceListTest, CheckDeviceIndex) {
  EXPECT_NO_THROW(check_device_index(1, kTwoGpus));
  try {
    check_device_index(2, kTwoGpus);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "no CUDA device 2: this machine has 2 (0: NVIDIA H200, 1: NVIDIA H100 80GB HBM3)");
  }
  EXPECT_THROW(check_device_index(-2, kTwoGpus), InputError);
}

}  // namespace
}  // namespace kiln
